"""PolicyOptimizer: micro-batches hold whole groups, and that does not change the update."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from torch import Tensor, nn

from lightrft.adapters.fakes import FakeCollective, FakePolicy, FakeStrategy
from lightrft.adapters.fakes.batches import make_sequence_batch
from lightrft.application.params import AlgorithmParams, TrainParams
from lightrft.application.policy_optimizer import PolicyOptimizer, group_contiguous
from lightrft.domain.ports import NamedTensors, PolicyOutput
from lightrft.domain.types import Experience, OptimizerParams, SequenceBatch, StepResult
from tests.helpers.experiences import ramp_experience

GROUPS, SIZE = 4, 3


def test_group_contiguous_keeps_first_appearance_and_row_order() -> None:
    rows = torch.tensor([9, 4, 7, 1, 3, 8])
    groups = torch.tensor([2, 0, 2, 5, 0, 2])
    # group 2 first (rows 9, 7, 8), then group 0 (4, 3), then group 5 (1)
    assert group_contiguous(rows, groups).tolist() == [9, 7, 8, 4, 3, 1]
    assert group_contiguous(rows[:0], groups[:0]).tolist() == []


class Log:
    """What happened, in order: the groups of each micro-batch forward, and "step"."""

    def __init__(self) -> None:
        self.events: list[list[int] | str] = []

    def mini_batches(self) -> list[list[list[int]]]:
        """The micro-batch groups of each optimizer step."""
        out: list[list[list[int]]] = [[]]
        for event in self.events:
            if event == "step":
                out.append([])
            else:
                out[-1].append(event)  # type: ignore[arg-type]
        return out[:-1]


class RecordingPolicy:
    """A ``FakePolicy`` that logs the group of every row it sees (prompt token 1 + group)."""

    def __init__(self, log: Log) -> None:
        self.inner, self.log = FakePolicy(seed=3), log

    @property
    def module(self) -> nn.Module:
        return self.inner.module

    def forward(
        self, batch: SequenceBatch, *, temperature: float = 1.0, with_entropy: bool = False
    ) -> PolicyOutput:
        self.log.events.append([int(row[row > 0][0]) - 1 for row in batch.input_ids])
        return self.inner.forward(batch, temperature=temperature, with_entropy=with_entropy)

    def weights_for_sync(self, full_state: NamedTensors) -> Iterator[tuple[str, Tensor]]:
        return self.inner.weights_for_sync(full_state)


class RecordingStrategy(FakeStrategy):
    """A ``FakeStrategy`` that logs each step and keeps the gradient it applied."""

    def __init__(self, log: Log) -> None:
        super().__init__(OptimizerParams(lr=1e-3))
        self.log, self.grads = log, []  # type: list[Tensor]

    def step(self, *, skip_reason: str | None = None) -> StepResult:
        self.log.events.append("step")
        self.grads.append(torch.cat([p.grad.flatten() for p in self.module.parameters()]))
        return super().step(skip_reason=skip_reason)


def grouped_experience() -> Experience:
    """4 prompts x 3 responses, rows in group order; prompt [1 + g, 9], responses vary."""
    prompts = [[1 + g, 9] for g in range(GROUPS) for _ in range(SIZE)]
    responses = [[10 + (i % 5)] * (1 + i % 4) for i in range(GROUPS * SIZE)]
    batch = make_sequence_batch(prompts, responses)
    return ramp_experience(batch, torch.arange(GROUPS).repeat_interleave(SIZE))


def train(params: TrainParams) -> tuple[Log, list[Tensor]]:
    log = Log()
    policy = RecordingPolicy(log)
    strategy = RecordingStrategy(log)
    strategy.prepare(policy.module)
    PolicyOptimizer(
        policy=policy,
        strategy=strategy,
        collective=FakeCollective(),
        algorithm=AlgorithmParams(entropy_coef=0.01),
        train=params,
    ).train(grouped_experience(), kl_coef=0.0, step=0)
    return log, strategy.grads


def contiguous(groups: list[int]) -> bool:
    runs = [g for i, g in enumerate(groups) if i == 0 or groups[i - 1] != g]
    return len(runs) == len(set(runs))


@pytest.mark.parametrize(
    "params",
    [
        TrainParams(micro_batch_size=SIZE, seed=1),
        TrainParams(micro_batch_size=2, mini_batch_size=6, seed=2),
        TrainParams(max_tokens_per_micro_batch=12, seed=3),
        TrainParams(max_tokens_per_micro_batch=15, seed=4),
        TrainParams(max_tokens_per_micro_batch=7, mini_batch_size=6, seed=5),
    ],
)
def test_micro_batches_hold_groups_together_and_give_the_one_micro_batch_gradient(
    params: TrainParams,
) -> None:
    log, grads = train(params)
    for micro_batches in log.mini_batches():
        if params.max_tokens_per_micro_batch is None:
            assert contiguous([g for micro in micro_batches for g in micro]), micro_batches
            continue
        # balanced token budget: groups contiguous inside a micro-batch; a group that fits
        # the budget is in one micro-batch only. Group tokens (prompt 2 + response
        # 1 + i % 4 for rows i = 3g .. 3g + 2): 12, 13, 14, 15.
        assert all(contiguous(micro) for micro in micro_batches), micro_batches
        fitting = [
            g for g, n in enumerate([12, 13, 14, 15]) if n <= params.max_tokens_per_micro_batch
        ]
        for group in fitting:
            assert sum(group in micro for micro in micro_batches) == 1, micro_batches
    if params.micro_batch_size == SIZE and params.mini_batch_size is None:
        # whole-batch mini-batch, micro-batches of the group size: one group each
        assert all(len(set(micro)) == 1 for micro in log.mini_batches()[0])
    one = TrainParams(
        micro_batch_size=GROUPS * SIZE, mini_batch_size=params.mini_batch_size, seed=params.seed
    )
    _, expected = train(one)
    assert len(grads) == len(expected)
    for got, want in zip(grads, expected, strict=True):
        torch.testing.assert_close(got, want, atol=1e-7, rtol=1e-5)


def _optimizer_at(lr: float) -> tuple[FakePolicy, PolicyOptimizer]:
    policy = FakePolicy(seed=0)
    strategy = FakeStrategy(OptimizerParams(lr=lr, warmup_steps=0))
    strategy.prepare(policy.module)
    optimizer = PolicyOptimizer(
        policy=policy,
        strategy=strategy,
        collective=FakeCollective(),
        algorithm=AlgorithmParams(),
        train=TrainParams(),
    )
    return policy, optimizer


def test_weights_made_non_finite_by_an_update_name_optim_lr() -> None:
    """EC C33: optim.lr=1e308 made the weights inf; the run failed a step later with an
    IndexError in the decoder, the cause unnamed."""
    from lightrft.application.policy_optimizer import NonFiniteWeightsError

    policy, optimizer = _optimizer_at(1e308)
    with pytest.raises(NonFiniteWeightsError, match=r"training step 4 .*Lower optim\.lr"):
        optimizer.train(grouped_experience(), kl_coef=0.0, step=3)
    assert not all(bool(torch.isfinite(p).all()) for p in policy.module.parameters())


def test_a_large_but_sound_update_passes_the_weight_check() -> None:
    _, optimizer = _optimizer_at(1e-1)
    assert optimizer.train(grouped_experience(), kl_coef=0.0, step=0).updated_policy
