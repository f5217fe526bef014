"""The synthetic task, its reward sources and the prompt source."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.fakes import (
    FakeModelReward,
    FakePromptSource,
    FakeRuleReward,
    synthetic_prompts,
    task,
)
from lightrft.domain.types import Completion, PromptRecord, RewardSample


def _sample(prompt: PromptRecord, tokens: tuple[int, ...]) -> RewardSample:
    completion = Completion(0, tokens, task.decode(tokens), "stop")
    return RewardSample(prompt, completion)


def test_vocabulary_and_rule_by_hand() -> None:
    # ids 3..15 are the digits "0123456789abc": id 3 -> "0", id 12 -> "9", id 15 -> "c"
    assert task.decode([3, 12, 15]) == "09c"
    assert task.encode_digits("09c") == (3, 12, 15)
    assert task.decode([3, task.EQUALS_ID, 4, task.EOS_ID, task.PAD_ID]) == "0=1"
    assert task.decode([4, task.EOS_ID], skip_special_tokens=False) == "1</s>"
    assert task.successor(3) == 4  # "0" -> "1"
    assert task.successor(15) == 3  # "c" wraps to "0"
    assert task.correct_answer((7, 9, 12, task.EQUALS_ID)) == 13  # last digit "9" -> "a"
    with pytest.raises(ValueError):
        task.successor(task.EOS_ID)
    with pytest.raises(ValueError):
        task.encode_digits("z")


def test_synthetic_prompts_are_deterministic_and_well_formed() -> None:
    source = synthetic_prompts(200, seed=3)
    again = synthetic_prompts(200, seed=3)
    other = synthetic_prompts(200, seed=4)
    assert len(source) == 200
    records = [source[i] for i in range(200)]
    assert records == [again[i] for i in range(200)]
    assert records != [other[i] for i in range(200)]
    lengths = set()
    last_digits = set()
    for record in records:
        *digits, terminator = record.prompt_token_ids
        assert terminator == task.EQUALS_ID
        assert all(3 <= d <= 15 for d in digits)
        lengths.add(len(digits))
        last_digits.add(digits[-1])
        # independent expectation: the character after the last digit's character
        chars = "0123456789abc"
        expected = chars[(chars.index(task.decode([digits[-1]])) + 1) % 13]
        assert record.reference == expected
        assert record.prompt_text == " ".join(task.decode([d]) for d in digits) + " ="
    assert lengths == {2, 3, 4}
    assert len(last_digits) == 13
    assert len({r.uid for r in records}) == 200


def test_rule_reward_scores_answer_then_eos_only() -> None:
    prompt = task.make_prompt("p", [5, 9])  # last digit "6" -> answer "7" = id 10
    assert prompt.reference == "7"
    reward = FakeRuleReward()
    samples = [
        _sample(prompt, (10, task.EOS_ID)),  # right answer, stops: 1
        _sample(prompt, (10, task.EOS_ID, 4)),  # only the first two tokens are judged: 1
        _sample(prompt, (10,)),  # no EOS: 0
        _sample(prompt, (10, 10, task.EOS_ID)),  # answer repeated: 0
        _sample(prompt, (11, task.EOS_ID)),  # wrong digit: 0
        _sample(prompt, (task.EOS_ID,)),  # empty answer: 0
        _sample(PromptRecord("q", "x", (5,), reference=None), (10, task.EOS_ID)),  # no ref: 0
    ]
    result = reward.score(samples)
    assert result.scores.tolist() == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert result.scores.dtype == torch.float32
    assert result.metrics["accuracy"].item() == pytest.approx(2 / 7)
    assert reward.name == "rule"
    assert (reward.score_calls, reward.scored) == (1, 7)


def test_model_reward_must_be_onloaded_to_score() -> None:
    prompt = task.make_prompt("p", [3])  # "0" -> "1" = id 4
    reward = FakeModelReward(name="rm")
    with pytest.raises(RuntimeError, match="offloaded"):
        reward.score([_sample(prompt, (4, task.EOS_ID))])
    reward.onload()
    result = reward.score([_sample(prompt, (4, task.EOS_ID)), _sample(prompt, (5,))])
    assert result.scores.tolist() == [1.0, 0.0]
    reward.offload()
    with pytest.raises(RuntimeError):
        reward.score([])
    assert (reward.onloads, reward.offloads, reward.score_calls) == (1, 1, 1)
    assert FakeModelReward(loaded=True).score([]).scores.shape == (0,)


def test_prompt_source_indexing_and_reads() -> None:
    records = [task.make_prompt(str(i), [3 + i]) for i in range(3)]
    source = FakePromptSource(records)
    assert len(source) == 3
    assert source[2] is records[2]
    assert source[0] is records[0]
    assert source.reads == [2, 0]
    with pytest.raises(IndexError):
        source[3]
    with pytest.raises(IndexError):
        source[-1]
