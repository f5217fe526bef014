"""Process rewards (domain): step splitting, aggregation, the step loss and the
``process_grpo`` estimator, against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from lightrft.domain.advantage_params import AdvantageParams
from lightrft.domain.advantages import ADVANTAGE_ESTIMATORS, AdvantageInputs, compute_advantages
from lightrft.domain.process_rewards import (
    StepLabelledExample,
    StepSpan,
    aggregate_steps,
    split_steps,
    step_classification_loss,
    step_probabilities,
)
from lightrft.domain.registry import UnknownChoiceError


def test_split_steps_keeps_the_separator_with_the_step_it_closes() -> None:
    text = "a=1\n\nb=2\n\nc"
    assert split_steps(text, "\n\n") == [StepSpan(0, 5), StepSpan(5, 10), StepSpan(10, 11)]
    assert [text[s.start : s.end] for s in split_steps(text, "\n\n")] == ["a=1\n\n", "b=2\n\n", "c"]
    assert split_steps("x <step> y <step>  ", "<step>") == [StepSpan(0, 8), StepSpan(8, 17)]
    assert split_steps("one step", "\n") == [StepSpan(0, 8)]
    assert split_steps("", "\n") == []
    with pytest.raises(ValueError, match="non-empty"):
        split_steps("x", "")


def test_aggregations_by_hand() -> None:
    scores = [torch.tensor([0.9, 0.5, 0.8]), torch.tensor([0.25]), torch.zeros(0)]
    assert aggregate_steps(scores, "min", empty_score=-1.0).tolist() == pytest.approx(
        [0.5, 0.25, -1.0]
    )
    assert aggregate_steps(scores, "last").tolist() == pytest.approx([0.8, 0.25, 0.0])
    assert aggregate_steps(scores, "product").tolist() == pytest.approx([0.36, 0.25, 0.0])
    assert aggregate_steps(scores, "mean").tolist() == pytest.approx([2.2 / 3, 0.25, 0.0])
    with pytest.raises(UnknownChoiceError, match="min"):
        aggregate_steps(scores, "median")


def test_step_probability_and_loss_by_hand() -> None:
    pos, neg = torch.tensor([2.0, 0.0]), torch.tensor([1.0, 3.0])
    p = [1 / (1 + math.exp(-1.0)), 1 / (1 + math.exp(3.0))]
    assert step_probabilities(pos, neg).tolist() == pytest.approx(p, rel=1e-6)
    loss = step_classification_loss(pos, neg, torch.tensor([1.0, 0.0]))
    assert loss.tolist() == pytest.approx([-math.log(p[0]), -math.log(1 - p[1])], rel=1e-6)
    # the same as the cross-entropy over the two label tokens' logits
    ce = torch.nn.functional.cross_entropy(
        torch.stack([pos, neg], -1), torch.tensor([0, 1]), reduction="none"
    )
    assert loss.tolist() == pytest.approx(ce.tolist(), rel=1e-6)


def test_example_checks_its_labels() -> None:
    with pytest.raises(ValueError, match="2 steps but 1 labels"):
        StepLabelledExample("q", ("a", "b"), (1.0,))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        StepLabelledExample("q", ("a",), (2.0,))
    with pytest.raises(ValueError, match="at least one step"):
        StepLabelledExample("q", (), ())


def test_example_kept_with_its_data_sets_numbers() -> None:
    # label_range=None: ratings such as PRM800K's -1 / 0 / +1 stay as given, only finite
    rated = StepLabelledExample("q", ("a", "b"), (1.0, -1.0), uid="f:3", label_range=None)
    assert rated.labels == (1.0, -1.0) and rated.uid == "f:3"
    with pytest.raises(ValueError, match=r"^f:3: step labels must be finite numbers, got \[nan\]"):
        StepLabelledExample("q", ("a",), (math.nan,), uid="f:3", label_range=None)
    with pytest.raises(ValueError, match=r"^f:3: step labels must lie in \[-1, 1\], got 2.0$"):
        StepLabelledExample("q", ("a",), (2.0,), uid="f:3", label_range=(-1.0, 1.0))
    with pytest.raises(ValueError, match=r"\[0, 1\], got nan"):  # the default range refuses NaN
        StepLabelledExample("q", ("a",), (math.nan,))


def _two_groups() -> AdvantageInputs:
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 1, 1]])
    step_rewards = torch.zeros(4, 4)
    step_mask = torch.zeros(4, 4, dtype=torch.bool)
    for row, t, s in [(0, 1, 1.0), (0, 3, 0.0), (1, 2, 0.5), (2, 0, 0.2), (2, 3, 0.8), (3, 3, 0.8)]:
        step_rewards[row, t], step_mask[row, t] = s, True
    return AdvantageInputs(
        rewards=torch.tensor([1.0, 0.0, 1.0, 1.0]),
        response_mask=mask,
        group_index=torch.tensor([0, 0, 1, 1]),
        step_rewards=step_rewards,
        step_mask=step_mask,
    )


def test_process_grpo_by_hand_on_two_groups() -> None:
    assert ADVANTAGE_ESTIMATORS.get("process_grpo").needs_step_rewards
    eps = 1e-6
    out = compute_advantages("process_grpo", _two_groups())
    # group 0: steps {1.0, 0.0, 0.5}: mean 0.5, Bessel std 0.5; outcome [1, 0]: std sqrt(0.5)
    hi, lo = 0.5 / (0.5 + eps), -0.5 / (0.5 + eps)
    o = 0.5 / (math.sqrt(0.5) + eps)
    # group 1: steps {0.2, 0.8, 0.8}: mean 0.6, std sqrt(0.12); outcome all equal: 0
    sd = math.sqrt(0.12)
    a, b = -0.4 / (sd + eps), 0.2 / (sd + eps)
    expected = [
        [hi + lo + o, hi + lo + o, lo + o, lo + o],  # steps end at t=1 (1.0) and t=3 (0.0)
        [0.0 - o, 0.0 - o, 0.0 - o, 0.0],  # one step (0.5 -> 0) at t=2, t=3 is padding
        [a + b, b, b, b],
        [b, b, b, b],
    ]
    assert out.advantages.tolist() == [pytest.approx(row, abs=1e-6) for row in expected]


def test_process_grpo_weighs_the_step_returns_by_process_weight() -> None:
    eps = 1e-6
    out = compute_advantages("process_grpo", _two_groups(), AdvantageParams(process_weight=0.25))
    # sample 0 of the hand example: step returns hi + lo at t=0, lo at t=2; outcome o
    hi, lo, o = 0.5 / (0.5 + eps), -0.5 / (0.5 + eps), 0.5 / (math.sqrt(0.5) + eps)
    assert out.advantages[0].tolist() == pytest.approx(
        [0.25 * (hi + lo) + o, 0.25 * (hi + lo) + o, 0.25 * lo + o, 0.25 * lo + o], abs=1e-6
    )
    only_outcome = compute_advantages(
        "process_grpo", _two_groups(), AdvantageParams(process_weight=0.0)
    )
    assert only_outcome.advantages[0].tolist() == pytest.approx([o] * 4, abs=1e-6)
    with pytest.raises(ValueError, match="process_weight"):
        AdvantageParams(process_weight=-0.5)


def test_process_grpo_needs_the_step_rewards() -> None:
    inputs = _two_groups()
    bare = AdvantageInputs(inputs.rewards, inputs.response_mask, inputs.group_index)
    with pytest.raises(ValueError, match="step_rewards"):
        compute_advantages("process_grpo", bare)
    outside = inputs.step_mask.clone()
    outside[1, 3] = True
    with pytest.raises(ValueError, match="outside response_mask"):
        compute_advantages(
            "process_grpo",
            AdvantageInputs(
                inputs.rewards,
                inputs.response_mask,
                inputs.group_index,
                step_rewards=inputs.step_rewards,
                step_mask=outside,
            ),
        )
