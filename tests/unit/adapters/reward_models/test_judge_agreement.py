"""The judge-RL reward: accuracy of the [[X]] verdict against the preference label plus
format_weight x (a <think> block closes before the verdict), by hand."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.reward_models.judge_agreement import JudgeAgreementReward
from lightrft.domain.types import Completion, PromptRecord, RewardSample


def _sample(text: str, reference: str) -> RewardSample:
    prompt = PromptRecord("p", "judge this", (1, 2), reference=reference)
    return RewardSample(prompt, Completion(0, (3,), text, "stop"))


CASES = [
    # text, reference, accuracy, format
    ("<think>1 is better</think> [[A]]", "A", 1, 1),
    ("<think>1 is better</think> [[A]]", "B", 0, 1),
    ("[[B]]", "B", 1, 0),  # no reasoning block
    ("[[B]] <think>late</think>", "B", 1, 0),  # the block does not come first
    ("<think>x</think> [[A]] or [[B]]", "A", 0, 0),  # two verdicts: unparsable
    ("<think>x</think> the first", "A", 0, 0),  # no verdict
    ("<think>x</think> [[C]]", "A", 0, 0),  # unknown label
]


@pytest.mark.parametrize("weight", [1.0, 0.5])
def test_scores_are_accuracy_plus_weighted_format(weight: float) -> None:
    source = JudgeAgreementReward(format_weight=weight)
    result = source.score([_sample(text, ref) for text, ref, *_ in CASES])
    expected = [acc + weight * fmt for _, _, acc, fmt in CASES]
    assert result.scores.tolist() == pytest.approx(expected)
    assert result.metrics["agreement"].item() == pytest.approx(3 / 7)
    assert result.metrics["format_rate"].item() == pytest.approx(2 / 7)
    assert result.metrics["unparsable"].item() == 3
    assert result.scores.dtype == torch.float32


def test_agrees_and_a_reference_that_is_no_label() -> None:
    source = JudgeAgreementReward(labels=("first", "second"))
    assert source.agrees("[[second]]", "second") and not source.agrees("[[first]]", "second")
    with pytest.raises(ValueError, match="reference 'A' is not a verdict label"):
        source.score([_sample("[[first]]", "A")])
