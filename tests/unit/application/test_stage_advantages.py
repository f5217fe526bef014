"""The advantage, KL, high-entropy and trained-row selection stages on hand-made work
records: values computed here from the formulas, not by the estimator."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from lightrft.adapters.fakes import FakeCollective
from lightrft.application.params import AlgorithmParams, RewardShapingParams, RolloutParams
from lightrft.application.stages.advantages import Advantages
from lightrft.application.stages.high_entropy import HighEntropyTokens
from lightrft.application.stages.kl_estimate import KLEstimate
from lightrft.application.stages.no_grad_forward import NoGradForward, PlanForwards
from lightrft.application.stages.trained_row_selection import SelectTrainedRows
from lightrft.domain.advantage_params import AdvantageParams
from tests.helpers.stage_work import work

GRPO = AlgorithmParams(advantage_estimator="grpo", policy_loss="ppo")
EPS = 1e-6


def _advantages(shaping: RewardShapingParams | None = None) -> Advantages:
    return Advantages(GRPO, shaping or RewardShapingParams(), FakeCollective())


def test_grpo_advantages_are_the_group_normalized_rewards_on_every_token() -> None:
    record = work([1.0, 0.0, 3.0, 3.0])  # group 0 varies, group 1 scored alike
    _advantages()(record)
    assert record.advantages is not None
    a = 0.5 / (math.sqrt(0.5) + EPS)  # (1 - 0.5) / (Bessel std of [1, 0] + eps)
    expected = torch.tensor([a, -a, 0.0, 0.0])[:, None].expand(4, 4)
    torch.testing.assert_close(record.advantages, expected)
    assert record.metrics["advantages/max"] == pytest.approx(a)


def test_advantages_already_computed_are_left_alone() -> None:
    record = work([1.0, 0.0, 3.0, 3.0])
    record.advantages = torch.full((4, 4), 7.0)
    _advantages()(record)
    assert bool((record.advantages == 7.0).all()) and record.metrics == {}


def test_the_clip_bounds_the_advantages() -> None:
    record = work([1.0, 0.0, 3.0, 3.0])
    _advantages(RewardShapingParams(advantage_clip=0.5))(record)
    assert record.advantages is not None
    assert float(record.advantages.max()) == 0.5 and float(record.advantages.min()) == -0.5


def test_k1_kl_is_old_minus_reference_and_its_mean_is_logged() -> None:
    record = work([0.0, 0.0, 0.0, 0.0])
    record.old = torch.full((4, 4), -1.0)
    record.ref = torch.full((4, 4), -1.5)
    KLEstimate("k1")(record)
    assert record.kl is not None and bool((record.kl == 0.5).all())
    assert record.metrics["kl/mean"] == 0.5


def test_no_kl_without_the_reference_forward() -> None:
    record = work([0.0, 0.0, 0.0, 0.0])
    record.old = torch.zeros(4, 4)
    KLEstimate("k1")(record)
    assert record.kl is None and "kl/mean" not in record.metrics


def test_high_entropy_keeps_the_top_fraction_of_tokens() -> None:
    record = work([0.0, 0.0, 0.0, 0.0])
    record.advantages = torch.ones(4, 4)
    record.entropy = torch.arange(16, dtype=torch.float32).reshape(4, 4)
    HighEntropyTokens(0.25)(record)
    assert record.advantages is not None
    kept = record.advantages.flatten().nonzero().flatten().tolist()
    assert kept == [12, 13, 14, 15]  # the four largest entropies of 16 tokens
    assert record.metrics["high_entropy/kept_fraction"] == 0.25


def _selection(with_reference: bool = False) -> tuple[SelectTrainedRows, NoGradForward]:
    forward = NoGradForward(RolloutParams(forward_micro_batch_size=1), FakeCollective(), 1.0)
    return SelectTrainedRows(_advantages(), forward, with_reference=with_reference), forward


def test_the_old_forward_is_narrowed_to_the_rows_with_an_advantage() -> None:
    record = work([1.0, 0.0, 3.0, 3.0, 0.0, 2.0])
    selection, forward = _selection()
    PlanForwards(forward)(record)
    assert [b.tolist() for b in record.old_batches] == [[0], [1], [2], [3], [4], [5]]
    selection(record)
    assert record.advantages is not None  # computed first
    assert [b.tolist() for b in record.old_batches] == [[0], [1], [4], [5]]
    assert [b.tolist() for b in record.batches] == [[0], [1], [2], [3], [4], [5]]
    assert next(iter(record.metrics)) == "logprobs/old_forwarded_fraction"
    assert record.metrics["logprobs/old_forwarded_fraction"] == pytest.approx(4 / 6)


def test_a_step_with_a_kl_term_forwards_every_row() -> None:
    record = work([1.0, 0.0, 3.0, 3.0], kl_coef=0.1)
    selection, forward = _selection(with_reference=True)
    PlanForwards(forward)(record)
    selection(record)
    assert record.advantages is None and len(record.old_batches) == 4


def test_the_alike_gate_reads_the_engines_sampled_logprobs() -> None:
    # pairs [1, 0] mixed, [0, 0] and [1, 1] alike; the gate compares the mean -log p of the
    # fake engine's sampled tokens (computed here from the record) with its threshold
    record = work([1.0, 0.0, 0.0, 0.0, 1.0, 1.0])
    assert record.rollout_logprobs is not None
    mask = record.mask.bool()
    entropy = float(-record.rollout_logprobs[mask].mean())
    for threshold, trained in [(entropy + 0.01, True), (entropy - 0.01, False)]:
        record = work([1.0, 0.0, 0.0, 0.0, 1.0, 1.0])
        gate = AdvantageParams(alike_group_advantage=1.0, alike_group_max_entropy=threshold)
        Advantages(replace(GRPO, advantage=gate), RewardShapingParams(), FakeCollective())(record)
        assert record.advantages is not None
        alike_rows = record.advantages[2:].abs().sum(-1) > 0
        assert bool(alike_rows.all()) is trained and bool(alike_rows.any()) is trained
        assert record.metrics["groups/alike_trained"] == float(trained)
