"""The original LightRFT's R1-AQA rule (avqa_rule): accuracy of the <answer> text plus the
format (the response ends with an <answer> block), summed, hand-computed."""

from __future__ import annotations

import pytest

from lightrft.adapters.rewards import AnswerTagRule
from lightrft.domain.types import Completion, PromptRecord, RewardSample


def sample(text: str, reference: str) -> RewardSample:
    prompt = PromptRecord("p", "Which sound?", (1,), reference=reference)
    return RewardSample(prompt, Completion(0, (2,), text, "stop"))


CASES = [
    ("<answer>dog barking</answer>", "dog barking", 2.0),  # right and formatted
    ("I hear it. <answer> dog barking </answer>", " dog barking", 2.0),  # both stripped
    ("<answer>dog barking</answer> sure.", "dog barking", 1.0),  # text after the block
    ("dog barking", "dog barking", 1.0),  # no block: the whole response, no format
    ("<answer>cat</answer>", "dog barking", 1.0),  # formatted, wrong
    ("<answer>Dog barking</answer>", "dog barking", 1.0),  # exact text: case counts
    ("<answer>3.0</answer>", "3", 2.0),  # the same number
    ("<answer>a</answer> then <answer>b</answer>", "a", 2.0),  # the first block answers
    ("nothing", "dog", 0.0),
]


def test_scores_match_the_original_r1_aqa_rule() -> None:
    rule = AnswerTagRule()
    result = rule.score([sample(text, ref) for text, ref, _ in CASES])
    assert result.scores.tolist() == pytest.approx([want for _, _, want in CASES])
    assert float(result.metrics["accuracy"]) == pytest.approx(6 / 9)
    assert float(result.metrics["format_rate"]) == pytest.approx(6 / 9)
    assert rule.name == "avqa_rule"
