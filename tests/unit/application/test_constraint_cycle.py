"""Cost constraints in the RL cycle (fakes): the multiplier follows projected dual ascent on
the logged batch costs, the constraint holds the cost down, and a resumed run continues
bitwise (the multiplier is in the checkpoint)."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.fakes import FakeRuleReward, InMemoryCheckpointStore
from lightrft.application.constraint_step import ConstraintState
from lightrft.domain.constraints import CostLimit
from tests.helpers.fake_cycle import build_rig

# the cost source scores exactly what the reward pays for (a right answer), so the two pull
# against each other and the multiplier has work to do
LIMIT = CostLimit("cost", limit=0.1, multiplier_lr=0.5, init=0.2)


def _rig(steps: int, constraints: tuple[CostLimit, ...] = (LIMIT,), **kwargs: object):  # type: ignore[no-untyped-def]
    return build_rig(
        "grpo",
        total_steps=steps,
        extra_rewards=[FakeRuleReward("cost")],
        constraints=constraints,
        prompts_per_step=4,
        **kwargs,  # type: ignore[arg-type]
    )


def test_multiplier_follows_projected_dual_ascent_on_the_batch_costs() -> None:
    rig = _rig(4)
    rig.cycle.run(resume=False)
    multiplier = LIMIT.init
    for _, row in rig.tracker.metrics:
        cost = row["constraint/cost/cost"]
        # the batch mean cost is the cost source's mean score (cost = score)
        assert cost == pytest.approx(row["reward/cost/mean"])
        multiplier = max(0.0, multiplier + LIMIT.multiplier_lr * (cost - LIMIT.limit))
        assert row["constraint/cost/multiplier"] == multiplier
        assert row["constraint/cost/violation_rate"] == pytest.approx(cost)  # 0/1 scores
    assert rig.cycle.state.constraints == ConstraintState((multiplier,))


def test_resume_with_a_constraint_is_bitwise_identical() -> None:
    full = _rig(4, checkpoint_every=2)
    full.cycle.run()
    store = InMemoryCheckpointStore()
    first = _rig(4, checkpoint_every=2, checkpoints=store)
    first.cycle.run(max_steps=3)  # checkpoint at step 2; step 3 is lost
    assert store.load(2)["constraints"] == {
        "cost": first.tracker.metrics[1][1]["constraint/cost/multiplier"]
    }
    resumed = _rig(4, checkpoint_every=2, checkpoints=store)
    resumed.cycle.run()
    assert resumed.cycle.state.constraints == full.cycle.state.constraints
    for name, value in full.policy.module.state_dict().items():
        assert torch.equal(resumed.policy.module.state_dict()[name], value), name
    full_rows = dict(full.tracker.metrics)
    for step, row in resumed.tracker.metrics:
        for key in ("constraint/cost/multiplier", "constraint/cost/cost", "reward/mean"):
            assert row[key] == full_rows[step][key], (step, key)


def test_a_checkpoint_without_the_constraint_is_refused_by_name() -> None:
    store = InMemoryCheckpointStore()
    _rig(1, constraints=(), checkpoint_every=1, checkpoints=store).cycle.run()
    with pytest.raises(ValueError, match=r"reward.constraints \['cost'\]"):
        _rig(2, checkpoint_every=1, checkpoints=store).cycle.run()
