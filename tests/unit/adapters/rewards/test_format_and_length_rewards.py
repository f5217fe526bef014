"""FormatReward (judged on the response only) and LengthReward (overlong penalty)."""

from __future__ import annotations

import time

import pytest
import torch

from lightrft.adapters.rewards import FormatReward, LengthReward
from lightrft.domain.ports import RewardSource
from lightrft.domain.types import Completion, PromptRecord, RewardSample

TAGGED_PROMPT = (
    "<|system|>Answer as <think> your reasoning </think> then the answer.<|user|>"
    "Example: <think>2+2 is 4</think> 4. Now: what is 3+4?<|assistant|>"
)


def sample(
    response: str, prompt: str = "What is 3+4?", n_tokens: int = 1, finish: str = "stop"
) -> RewardSample:
    record = PromptRecord(uid="u", prompt_text=prompt, prompt_token_ids=(1, 2))
    completion = Completion(
        prompt_index=0,
        token_ids=tuple(range(n_tokens)),
        text=response,
        finish_reason=finish,  # type: ignore[arg-type]
    )
    return RewardSample(prompt=record, completion=completion)


@pytest.mark.parametrize(
    ("response", "ok"),
    [
        ("<think>3+4 is 7</think> 7", True),
        ("  <think>\nmulti\nline\n</think>\n\nThe answer is 7.\n", True),
        ("<think></think>7", True),
        ("<think>reasoning</think>", False),  # no answer
        ("<think>reasoning</think>   \n", False),  # blank answer
        ("7", False),  # no reasoning block
        ("preamble <think>r</think> 7", False),  # text before the block
        ("<think>r</think> 7 <think>again</think> 8", False),  # two blocks
        ("<think>a <think>nested</think> b</think> 7", False),
        ("<think>never closed 7", False),
        ("</think> 7", False),  # the opening tag is required by default
        ("", False),
    ],
)
def test_default_format(response: str, ok: bool) -> None:
    reward = FormatReward()
    assert reward.matches(response) is ok
    expected = 1.0 if ok else 0.0
    assert reward.score([sample(response)]).scores.tolist() == [expected]


def test_the_prompt_never_counts() -> None:
    reward = FormatReward()
    # The prompt shows a perfectly formatted example; the response does not follow it.
    bad = reward.score([sample("7", prompt=TAGGED_PROMPT)])
    assert bad.scores.tolist() == [0.0]
    # A well-formed response is judged well-formed whatever the prompt holds.
    good = reward.score([sample("<think>3+4=7</think> 7", prompt=TAGGED_PROMPT)])
    assert good.scores.tolist() == [1.0]


def test_scores_and_format_rate() -> None:
    reward = FormatReward(matched_score=0.5, unmatched_score=-0.5, name="fmt")
    assert isinstance(reward, RewardSource) and reward.name == "fmt"
    result = reward.score([sample("<think>a</think> b"), sample("b"), sample("c"), sample("d")])
    torch.testing.assert_close(result.scores, torch.tensor([0.5, -0.5, -0.5, -0.5]))
    assert float(result.metrics["format_rate"]) == pytest.approx(0.25)


def test_custom_tags_and_answer_pattern() -> None:
    reward = FormatReward(
        think_open="<reasoning>", think_close="</reasoning>", answer_pattern=r"<answer>.+?</answer>"
    )
    assert reward.matches("<reasoning>r</reasoning>\n<answer>7</answer>")
    assert not reward.matches("<reasoning>r</reasoning>\n7")
    assert not reward.matches("<think>r</think><answer>7</answer>")
    assert not reward.matches("<reasoning>r</reasoning><answer>7</answer> trailing")


def test_think_opened_by_the_prompt() -> None:
    reward = FormatReward(think_opened_by_prompt=True)
    assert reward.matches("reasoning...</think> 7")
    assert not reward.matches("<think>reasoning</think> 7")  # a second opening
    assert not reward.matches("no closing tag 7")


def test_custom_full_pattern_replaces_the_default() -> None:
    reward = FormatReward(pattern=r"Answer: \d+")
    assert reward.matches("Answer: 12")
    assert not reward.matches("<think>x</think> Answer: 12")


def test_long_unmatched_responses_are_judged_quickly() -> None:
    reward = FormatReward()
    response = "<think>" + "a " * 200_000 + "</think> answer <think>"
    start = time.monotonic()
    assert not reward.matches(response)
    assert not reward.matches("<think>" + "x" * 400_000)
    assert time.monotonic() - start < 2


def test_length_reward_follows_the_overlong_penalty() -> None:
    # max_length 10, cache 4: no penalty up to 6 tokens; 8 tokens -> (6 - 8) / 4 * 2 = -1.0;
    # 10 tokens -> (6 - 10) / 4 * 2 = -2.0; 12 tokens (past the budget) -> -factor = -2.0.
    reward = LengthReward(max_length=10, cache_length=4, factor=2.0)
    assert isinstance(reward, RewardSource) and reward.name == "overlong"
    lengths = [3, 6, 8, 10, 12]
    samples = [sample("x", n_tokens=n, finish="length" if n >= 10 else "stop") for n in lengths]
    result = reward.score(samples)
    torch.testing.assert_close(result.scores, torch.tensor([0.0, 0.0, -1.0, -2.0, -2.0]))
    assert float(result.metrics["overlong_rate"]) == pytest.approx(3 / 5)
    assert float(result.metrics["truncated_rate"]) == pytest.approx(2 / 5)
    assert float(result.metrics["mean_length"]) == pytest.approx(39 / 5)


def test_length_reward_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError):
        LengthReward(max_length=4, cache_length=8)
    with pytest.raises(ValueError):
        LengthReward(max_length=4, cache_length=2, factor=-1.0)
