"""The original LightRFT's gsm8k_rule / geo3k_rule: 0.9 x (the last \\boxed{} equals the
reference) + 0.1 x (a <think>...</think> block ends before the first \\boxed{}), hand-computed."""

from __future__ import annotations

import pytest

from lightrft.adapters.rewards import ThinkBoxedRule
from lightrft.adapters.rewards.think_boxed_rule import think_then_boxed
from lightrft.domain.types import Completion, PromptRecord, RewardSample

SYSTEM = "The reasoning MUST BE enclosed within <think> </think> tags, the answer in \\boxed{}."


def sample(text: str, reference: str) -> RewardSample:
    prompt = PromptRecord("p", f"{SYSTEM}\nQuestion?", (1, 2), reference=reference)
    return RewardSample(prompt, Completion(0, (3,), text, "stop"))


CASES = [
    ("<think>6 x 7</think> So \\boxed{42}.", "42", 1.0),  # correct and formatted
    ("It is \\boxed{42}.", "42", 0.9),  # correct, no reasoning block
    ("<think>6 x 7</think> \\boxed{41}", "42", 0.1),  # formatted, wrong
    ("41", "42", 0.0),  # neither
    ("42", "42", 0.0),  # right number, but no box: no accuracy either
    ("\\boxed{42} <think>after</think>", "42", 0.9),  # the block after the box: no format
    ("<think>a</think> \\boxed{41}, no: \\boxed{42}", "42", 1.0),  # the last box is the answer
    ("<think>half</think> \\boxed{\\frac{1}{2}}", "\\frac{1}{2}", 1.0),  # nested braces
    ("<think>x</think> \\boxed{2\\sqrt{3}}", "2\\sqrt{3}", 1.0),  # a Geo3K-style answer
    ("<think>unclosed \\boxed{42}", "42", 0.9),  # no closed block
]


@pytest.mark.parametrize("kind", ["gsm8k_rule", "geo3k_rule"])
def test_scores_match_the_original_recipe(kind: str) -> None:
    rule = ThinkBoxedRule(name=kind, format_weight=0.1)
    result = rule.score([sample(text, ref) for text, ref, _ in CASES])
    assert result.scores.tolist() == pytest.approx([want for _, _, want in CASES], abs=1e-6)
    assert float(result.metrics["accuracy"]) == pytest.approx(7 / 10)
    assert float(result.metrics["format_rate"]) == pytest.approx(5 / 10)
    assert rule.name == kind
    rule.close()


def test_a_correct_formatted_answer_reaches_exactly_one() -> None:
    # evaluation counts a sample correct at reward >= 1.0: 0.9 + 0.1 must not fall short
    (score,) = ThinkBoxedRule().score([sample("<think>t</think> \\boxed{7}", "7")]).scores
    assert float(score) >= 1.0


def test_the_format_weight_splits_the_reward() -> None:
    rule = ThinkBoxedRule(format_weight=0.25)
    scores = rule.score([sample("\\boxed{3}", "3"), sample("<think>t</think>\\boxed{2}", "3")])
    assert scores.scores.tolist() == pytest.approx([0.75, 0.25])
    with pytest.raises(ValueError, match="format_weight must be in"):
        ThinkBoxedRule(format_weight=1.5)


def test_the_format_check_reads_the_response_only() -> None:
    assert think_then_boxed("<think>a</think>\\boxed{1}")
    assert not think_then_boxed("\\boxed{1}<think>a</think>")
    assert not think_then_boxed("<think>a</think> no box")
    # the system prompt quotes both tags: the response alone decides
    assert float(ThinkBoxedRule().score([sample("\\boxed{1}", "2")]).scores[0]) == 0.0
