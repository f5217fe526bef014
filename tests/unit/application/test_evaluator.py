"""Evaluator metrics are over samples, not over batches (the last batch may be smaller)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch

from lightrft.application.evaluator import Evaluator
from lightrft.domain.types import (
    Completion,
    PromptRecord,
    RewardResult,
    RewardSample,
    SamplingParams,
)


class EchoEngine:
    """Completion j of prompt i has i + 1 tokens; text is the prompt's uid."""

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        return [
            Completion(i, (7,) * (int(p.uid[1:]) + 1), p.uid, "stop")
            for i, p in enumerate(prompts)
            for _ in range(sampling.n)
        ]


class UidReward:
    """Scores 1 for the prompts in ``correct`` (by uid), else 0; reports ``hits`` (a mean)."""

    def __init__(self, name: str, correct: set[str]) -> None:
        self.name, self.correct = name, correct

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        scores = torch.tensor([float(s.prompt.uid in self.correct) for s in samples])
        return RewardResult(scores, {"hits": scores.mean()})


PROMPTS = [PromptRecord(f"p{i}", f"q{i}", (1,)) for i in range(5)]


@pytest.mark.parametrize("n", [1, 2])
def test_source_metrics_are_weighted_by_samples(n: int) -> None:
    # batch_size 2 over 5 prompts: batches of 2, 2 and 1 prompts. Only p4 (the last,
    # one-prompt batch) is correct: per-sample mean 1/5 = 0.2; the mean of the three batch
    # means would be (0 + 0 + 1) / 3 = 0.333.
    evaluator = Evaluator(EchoEngine(), [UidReward("r", {"p4"})], batch_size=2)
    metrics = evaluator.evaluate(PROMPTS, SamplingParams(n=n))
    assert metrics["eval/reward/r/mean"] == pytest.approx(0.2)
    assert metrics["eval/reward/r/hits"] == pytest.approx(0.2)
    assert metrics["eval/reward_mean"] == pytest.approx(0.2)
    assert metrics["eval/accuracy"] == pytest.approx(0.2)
    # lengths 1..5 tokens, n samples each: (1 + 2 + 3 + 4 + 5) / 5 = 3
    assert metrics["eval/response_length"] == pytest.approx(3.0)


def test_two_sources_each_weighted_by_samples() -> None:
    # p0, p1 correct for "a": 2/5 = 0.4 (batch means 1, 0, 0 would give 0.333);
    # p2, p3, p4 correct for "b": 3/5 = 0.6 (batch means 0, 1, 1 would give 0.667).
    sources = [UidReward("a", {"p0", "p1"}), UidReward("b", {"p2", "p3", "p4"})]
    metrics = Evaluator(EchoEngine(), sources, batch_size=2).evaluate(PROMPTS, SamplingParams())
    assert metrics["eval/reward/a/mean"] == pytest.approx(0.4)
    assert metrics["eval/reward/b/mean"] == pytest.approx(0.6)
    assert metrics["eval/reward/a/hits"] == pytest.approx(0.4)


def test_max_prompts_cuts_the_last_batch() -> None:
    # 3 prompts in batches of 2 and 1; p2 correct: 1/3 (batch means would give 0.5).
    metrics = Evaluator(EchoEngine(), [UidReward("r", {"p2"})], batch_size=2).evaluate(
        PROMPTS, SamplingParams(), max_prompts=3
    )
    assert metrics["eval/reward/r/mean"] == pytest.approx(1 / 3)
    assert metrics["eval/prompts"] == 3.0


class ConstantReward:
    """Scores ``value`` for every sample (a learned reward's dense verdict)."""

    def __init__(self, name: str, value: float) -> None:
        self.name, self.value = name, value

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        return RewardResult(torch.full((len(samples),), self.value), {})


def test_accuracy_sources_decide_correctness_where_a_dense_reward_would_lift_wrong_answers() -> (
    None
):
    # math right on p0 and p1 (2 of 5); a verdict of 1.0 on every sample. The combined reward
    # (math + verdict) is >= 1 everywhere: accuracy 1.0, though 3 answers are wrong. Judged
    # by math alone: 0.4, pass@1 too; the reward mean is still the combined one.
    sources = [UidReward("math", {"p0", "p1"}), ConstantReward("prm", 1.0)]
    combined = Evaluator(EchoEngine(), sources).evaluate(PROMPTS, SamplingParams())
    assert combined["eval/accuracy"] == pytest.approx(1.0)
    judged = Evaluator(EchoEngine(), sources, accuracy_sources=["math"])
    metrics = judged.evaluate(PROMPTS, SamplingParams(n=2))
    assert metrics["eval/accuracy"] == pytest.approx(0.4)
    assert metrics["eval/pass@1"] == pytest.approx(0.4)
    assert metrics["eval/reward_mean"] == pytest.approx(1.4)
    # weights apply: math at weight 0.5 never reaches the threshold 1
    halved = Evaluator(EchoEngine(), sources, {"math": 0.5}, accuracy_sources=["math"])
    assert halved.evaluate(PROMPTS, SamplingParams())["eval/accuracy"] == 0.0


def test_accuracy_sources_must_be_reward_sources() -> None:
    with pytest.raises(ValueError, match=r"accuracy_sources names unknown reward sources \['x'\]"):
        Evaluator(EchoEngine(), [UidReward("math", set())], accuracy_sources=["x"])
