"""Shared pieces of the token-budget tests: uneven grouped experiences, a gradient-recording
strategy, a thread collective, and one PolicyOptimizer pass."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from lightrft.adapters.fakes import FakeCollective, FakeStrategy
from lightrft.adapters.fakes.batches import make_sequence_batch
from lightrft.application.params import AlgorithmParams, TrainParams
from lightrft.application.policy_optimizer import PolicyOptimizer
from lightrft.domain.ports import Collective, Policy
from lightrft.domain.types import Experience, OptimizerParams, StepResult
from tests.helpers.experiences import ramp_experience
from tests.helpers.simulated_ranks import ThreadCollective

__all__ = ["GradRecorder", "ThreadCollective", "train_once", "uneven_experience"]


class GradRecorder(FakeStrategy):
    """A ``FakeStrategy`` that keeps the flat gradient of each step and counts backwards."""

    def __init__(self) -> None:
        super().__init__(OptimizerParams(lr=1e-3))
        self.grads: list[Tensor] = []

    def step(self, *, skip_reason: str | None = None) -> StepResult:
        self.grads.append(
            torch.cat([p.grad.flatten() for p in self.module.parameters() if p.grad is not None])
        )
        return super().step(skip_reason=skip_reason)


def uneven_experience(
    response_lengths: Sequence[int], group_size: int, vocab: int = 16
) -> Experience:
    """Groups of ``group_size`` rows; group g has prompt [1 + g % 7, 9, 4 + g % 3]; row i
    answers with ``response_lengths[i]`` tokens (ids below ``vocab``)."""
    b = len(response_lengths)
    groups = [i // group_size for i in range(b)]
    prompts = [[1 + g % 7, 9, 4 + g % 3] for g in groups]
    responses = [
        [3 + (i * 5 + j) % (vocab - 3) for j in range(n)] for i, n in enumerate(response_lengths)
    ]
    return ramp_experience(make_sequence_batch(prompts, responses), groups)


def train_once(
    policy: Policy,
    experience: Experience,
    params: TrainParams,
    collective: Collective | None = None,
    algorithm: AlgorithmParams | None = None,
) -> tuple[Tensor, GradRecorder]:
    """One PolicyOptimizer pass (one optimizer step); returns the gradient and the strategy."""
    strategy = GradRecorder()
    module: nn.Module = policy.module  # type: ignore[attr-defined]
    strategy.prepare(module)
    PolicyOptimizer(
        policy=policy,
        strategy=strategy,
        collective=collective or FakeCollective(),
        algorithm=algorithm or AlgorithmParams(entropy_coef=0.01),
        train=params,
    ).train(experience, kl_coef=0.0, step=0)
    return strategy.grads[0], strategy
