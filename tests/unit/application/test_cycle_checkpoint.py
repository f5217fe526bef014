"""The cycle's run state in a checkpoint: a round trip restores it exactly, checkpoints of
older versions (no constraints, no health monitor state) still load, a changed KL
controller is refused, and batches generated ahead are counted as dropped."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from lightrft.application.cycle_checkpoint import CycleState
from lightrft.application.off_policy_params import OffPolicyParams
from lightrft.domain.kl import AdaptiveKLController
from tests.helpers.fake_cycle import build_rig


def test_a_round_trip_restores_the_state_the_strategy_and_the_rng() -> None:
    first = build_rig("grpo", total_steps=2, prompts_per_step=2, n=2)
    first.cycle.run(resume=False)
    saved = first.cycle.state_dict()
    assert saved["step"] == 2 and saved["kl"] == {"type": "FixedKLController", "value": 0.0}
    expected_draw = torch.rand(3)  # what the RNG gives next after the checkpoint
    second = build_rig("grpo", total_steps=2, prompts_per_step=2, n=2)
    restored = second.cycle.checkpoints.load_state_dict(saved)
    assert (
        restored.state == first.cycle.state and restored.policy_version == saved["policy_version"]
    )
    assert restored.dropped_batches == 0
    assert torch.equal(torch.rand(3), expected_draw)
    for name, value in first.policy.module.state_dict().items():
        assert torch.equal(second.policy.module.state_dict()[name], value), name


def test_an_older_checkpoint_without_constraints_or_health_loads() -> None:
    rig = build_rig("grpo", total_steps=1, prompts_per_step=2, n=2)
    saved = rig.cycle.state_dict()
    for key in ("constraints", "health"):
        del saved[key]
    rig.cycle.load_state_dict(saved)
    assert rig.cycle.state.constraints.multipliers == ()
    assert rig.cycle.engine_version is None  # re-synced before its next use


def test_a_different_kl_controller_is_refused() -> None:
    rig = build_rig("grpo", total_steps=1, prompts_per_step=2, n=2)
    saved = rig.cycle.state_dict()
    saved["kl"] = {"type": "AdaptiveKLController", "value": 0.1, "target": 6.0, "horizon": 10}
    with pytest.raises(
        ValueError, match="AdaptiveKLController KL controller, config asks for fixed"
    ):
        rig.cycle.load_state_dict(saved)


def test_the_initial_state_follows_the_settings() -> None:
    rig = build_rig("grpo", total_steps=1, prompts_per_step=2, n=2)
    s = rig.cycle.settings
    adaptive = replace(
        s.algorithm, kl_controller="adaptive", kl_coef=0.2, kl_target=1.0, kl_horizon=10.0
    )
    state = CycleState.initial(adaptive, s.shaping)
    assert state.step == 0 and isinstance(state.kl, AdaptiveKLController)
    assert state.kl.value == 0.2 and state.reward_moments.count == 0


def test_batches_in_flight_are_dropped_on_resume_and_logged_once() -> None:
    off = OffPolicyParams(mode="one_step_off", max_staleness=1)
    rig = build_rig("grpo", total_steps=3, prompts_per_step=2, n=2, off_policy=off)
    rig.cycle.train_step()  # the next batch is generated ahead
    saved = rig.cycle.state_dict()
    assert saved["async_in_flight"] == [[1, 0]]  # step 1's batch, from policy version 0
    resumed = build_rig("grpo", total_steps=3, prompts_per_step=2, n=2, off_policy=off)
    resumed.cycle.load_state_dict(saved)
    first = resumed.cycle.train_step()
    second = resumed.cycle.train_step()
    assert first["async/dropped_on_resume"] == float(len(saved["async_in_flight"]))
    assert second["async/dropped_on_resume"] == 0.0
