"""The shaping stage and the last stage (the experience batch and its metrics)."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.fakes import FakeCollective
from lightrft.application.params import RewardShapingParams
from lightrft.application.stages.experience_batch import experience_batch
from lightrft.application.stages.shaping import ShapeRewards
from tests.helpers.stage_work import work


def test_without_shaping_the_reward_is_the_total_score() -> None:
    record = work([1.0, 0.0, 0.5, 0.25])
    record.rewards = None
    ShapeRewards(RewardShapingParams(), 4, FakeCollective())(record)
    assert record.rewards is not None and record.rewards.tolist() == [1.0, 0.0, 0.5, 0.25]
    assert record.moments.count == 0  # no normalization, no statistics


def test_the_clip_and_the_running_moments_apply() -> None:
    record = work([4.0, 0.0, 0.0, 0.0])
    shaping = RewardShapingParams(normalize=True, normalize_subtract_mean=True, reward_clip=1.0)
    ShapeRewards(shaping, 4, FakeCollective())(record)
    assert record.moments.count == 4 and record.moments.mean == pytest.approx(1.0)
    assert record.rewards is not None
    # (4 - 1) / std is clipped to 1; the zeros become -1 / std, inside the clip
    assert float(record.rewards[0]) == 1.0
    assert bool((record.rewards[1:] < 0).all()) and bool((record.rewards[1:] > -1).all())


def test_the_batch_holds_the_records_fields_and_the_metrics_in_stage_order() -> None:
    record = work([1.0, 0.0, 3.0, 3.0])
    record.collected.metrics["dynamic_sampling/rounds"] = 1.0
    record.advantages = torch.tensor([1.0, -1.0, 0.0, 0.0])[:, None].expand(4, 4)
    record.returns = record.advantages
    record.metrics["kl/mean"] = 0.25
    batch = experience_batch(record)
    assert batch.experience.advantages is record.advantages
    assert batch.kl == 0.25 and batch.generated_tokens == 16
    assert batch.reward_by_source["rule"].tolist() == [1.0, 0.0, 3.0, 3.0]
    keys = list(batch.metrics)
    assert keys[:3] == ["dynamic_sampling/rounds", "kl/mean", "advantages/zero_groups_fraction"]
    assert batch.metrics["advantages/zero_groups_fraction"] == 0.5  # group 1 scored alike
    assert batch.metrics["reward/mean"] == pytest.approx(7.0 / 4)
    assert batch.metrics["response_length/truncated_fraction"] == 1.0
    assert batch.metrics["rollout/samples"] == 4.0
