"""Off-policy rollouts in the colocated cycle (fakes): staleness 0 is the synchronous cycle
bitwise; one step off trains batch k+1 generated with the policy of step k."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest
import torch

from lightrft.adapters.fakes import FakeRolloutEngine, FakeRuleReward
from lightrft.application.off_policy_params import OffPolicyParams
from lightrft.application.params import AlgorithmParams
from lightrft.domain.policy_losses import POLICY_LOSSES
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


def _rig(mode: str = "sync", staleness: int = 0, **kwargs: object) -> FakeRig:
    off = OffPolicyParams(mode=mode, max_staleness=staleness)  # type: ignore[arg-type]
    return build_rig(
        total_steps=STEPS,
        prompts_per_step=4,
        off_policy=off,
        engine=RecordingEngine(seed=1),
        extra_rewards=[DenseReward()],  # every step updates the policy
        **kwargs,  # type: ignore[arg-type]
    )


def _run_recording_versions(rig: FakeRig) -> list[str]:
    """Runs ``rig``; returns the trainer's weight checksum of every policy version."""
    versions = [weights_checksum(rig.policy.module.named_parameters())]

    def after_step() -> bool:
        versions.append(weights_checksum(rig.policy.module.named_parameters()))
        return False

    rig.cycle.run(should_stop=after_step)
    return versions


def _comparable(history: list[dict[str, float]]) -> list[dict[str, float]]:
    return [{k: v for k, v in row.items() if not k.startswith(TIMING)} for row in history]


def _weights(rig: FakeRig) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in rig.policy.module.named_parameters()}


def test_staleness_zero_is_the_synchronous_cycle_bitwise() -> None:
    sync, zero = _rig(), _rig("async", 0)
    sync_versions, zero_versions = _run_recording_versions(sync), _run_recording_versions(zero)
    assert sync_versions == zero_versions and len(set(zero_versions)) == STEPS + 1
    sync_history, zero_history = sync.cycle.history, zero.cycle.history
    assert _comparable(sync_history) == _comparable(zero_history)
    for name, tensor in _weights(sync).items():
        assert torch.equal(tensor, _weights(zero)[name]), name
    assert [row["async/staleness_max"] for row in zero_history] == [0.0] * STEPS
    assert isinstance(sync.engine, RecordingEngine) and isinstance(zero.engine, RecordingEngine)
    assert sync.engine.generated_with == zero.engine.generated_with


def test_one_step_off_generates_batch_k_plus_1_with_the_policy_of_step_k() -> None:
    rig, sync = _rig("one_step_off", 1), _rig()
    versions, sync_versions = _run_recording_versions(rig), _run_recording_versions(sync)
    assert len(set(versions)) == STEPS + 1  # every step changed the policy
    history = rig.cycle.history
    assert [row["async/staleness_max"] for row in history] == [0.0, 1.0, 1.0]
    assert isinstance(rig.engine, RecordingEngine) and isinstance(sync.engine, RecordingEngine)
    seeds = [seed for seed, _ in rig.engine.generated_with]
    assert seeds == [rig.cycle.rollout_seed(step) for step in range(STEPS)]
    used = [checksum for _, checksum in rig.engine.generated_with]
    assert used == [versions[max(0, step - 1)] for step in range(STEPS)]
    assert [c for _, c in sync.engine.generated_with] == sync_versions[:STEPS]
    # not the synchronous run under another name
    assert versions[2:] != sync_versions[2:]


@pytest.mark.slow
def test_async_staleness_two_bounds_the_lag_and_queues_two_batches() -> None:
    history = _rig("async", 2).cycle.run()
    assert [row["async/staleness_max"] for row in history] == [0.0, 1.0, 2.0]
    assert [row["async/queue_length"] for row in history] == [2.0, 1.0, 0.0]


def test_stale_batches_are_importance_corrected() -> None:
    ppo = POLICY_LOSSES.get("ppo").defaults
    corrected = AlgorithmParams(loss=replace(ppo, tis_cap=2.0))
    fresh = _rig("async", 0, algorithm=corrected).cycle.run()
    stale = _rig("one_step_off", 1, algorithm=corrected).cycle.run()
    # same weights for generation and training: every weight is exactly 1
    assert all(row["policy/tis_weight_mean"] == 1.0 for row in fresh)
    assert stale[0]["policy/tis_weight_mean"] == 1.0  # batch 0: not stale
    assert all(row["policy/tis_weight_mean"] != 1.0 for row in stale[1:])


def test_resume_drops_the_batches_generated_ahead_and_counts_them() -> None:
    first = _rig("one_step_off", 1, checkpoint_every=2)
    first.cycle.run(max_steps=2)
    saved = first.checkpoints.load(2)
    assert saved["async_in_flight"] == [[2, 1]]  # the batch of step 2, from version 1
    second = _rig("one_step_off", 1, checkpoint_every=2, checkpoints=first.checkpoints)
    history = second.cycle.run()
    assert [row["async/dropped_on_resume"] for row in history] == [1.0]
    assert second.cycle.state.step == STEPS


@pytest.mark.parametrize(
    ("mode", "staleness"), [("sync", 1), ("one_step_off", 0), ("one_step_off", 2), ("async", -1)]
)
def test_mode_and_staleness_must_agree(mode: str, staleness: int) -> None:
    with pytest.raises(ValueError, match="max_staleness"):
        OffPolicyParams(mode=mode, max_staleness=staleness)  # type: ignore[arg-type]
