"""A cycle wired with fakes for the off-policy tests: a dense reward (every step changes the
policy), an engine that records the weights it generated with, trainer version checksums."""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from lightrft.adapters.fakes import FakeRolloutEngine, FakeRuleReward
from lightrft.application.off_policy_params import OffPolicyParams
from lightrft.domain.types import (
    Completion,
    PromptRecord,
    RewardResult,
    RewardSample,
    SamplingParams,
)
from lightrft.domain.weight_checksum import weights_checksum
from tests.helpers.fake_cycle import FakeRig, build_rig

STEPS = 3
TIMING = ("time/", "throughput/", "memory/", "async/")


class DenseReward(FakeRuleReward):
    """A reward that differs between most samples, so every step changes the policy."""

    def __init__(self) -> None:
        super().__init__("dense")

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        scores = [sum(s.completion.token_ids) % 7 / 6 for s in samples]
        return RewardResult(torch.tensor(scores, dtype=torch.float32))


class RecordingEngine(FakeRolloutEngine):
    """Records, for every ``generate``, its seed and the checksum of the weights it used."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed=seed)
        self.generated_with: list[tuple[int | None, str]] = []

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        names = list(self.named_parameters())
        self.generated_with.append((sampling.seed, self.weights_checksum(names)))
        return super().generate(prompts, sampling)


class FailingEngine(FakeRolloutEngine):
    """Fails (or stalls ``stall_s``) at generate call number ``at`` (1-based); picklable,
    so a process engine can build it in its child."""

    def __init__(self, at: int, stall_s: float = 0.0) -> None:
        super().__init__(seed=1)
        self.at, self.stall_s = at, stall_s

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        if self.generate_calls + 1 == self.at:
            if not self.stall_s:
                raise OSError("the engine's device fell off the bus")
            time.sleep(self.stall_s)
        return super().generate(prompts, sampling)


def off_policy_rig(
    mode: str = "sync",
    staleness: int = 0,
    off_policy_params: OffPolicyParams | None = None,
    **kwargs: object,
) -> FakeRig:
    """``build_rig`` with ``STEPS`` steps, 4 prompts, a :class:`RecordingEngine` and the
    off-policy ``mode``; ``kwargs`` go to ``build_rig``."""
    off = off_policy_params or OffPolicyParams(mode=mode, max_staleness=staleness)  # type: ignore[arg-type]
    return build_rig(
        total_steps=STEPS,
        prompts_per_step=4,
        off_policy=off,
        engine=RecordingEngine(seed=1),
        extra_rewards=[DenseReward()],  # every step updates the policy
        **kwargs,  # type: ignore[arg-type]
    )


def run_recording_versions(rig: FakeRig) -> list[str]:
    """Runs ``rig``; returns the trainer's weight checksum of every policy version."""
    versions = [weights_checksum(rig.policy.module.named_parameters())]

    def after_step() -> bool:
        versions.append(weights_checksum(rig.policy.module.named_parameters()))
        return False

    rig.cycle.run(should_stop=after_step)
    return versions


def comparable(history: list[dict[str, float]]) -> list[dict[str, float]]:
    """The metrics without timings (and ``async/*``), for equality across runs."""
    return [{k: v for k, v in row.items() if not k.startswith(TIMING)} for row in history]


def policy_weights(rig: FakeRig) -> dict[str, torch.Tensor]:
    """Copies of the policy's parameters."""
    return {n: p.detach().clone() for n, p in rig.policy.module.named_parameters()}
