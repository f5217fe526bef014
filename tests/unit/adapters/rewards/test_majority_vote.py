"""MajorityVoteReward (TTRL): majority agreement per group, ties, no answers, label metrics."""

from __future__ import annotations

import pytest

from lightrft.adapters.rewards import MajorityVoteReward
from lightrft.domain.types import Completion, PromptRecord, RewardSample


def samples(groups: list[list[str]], references: list[str | None]) -> list[RewardSample]:
    out = []
    for g, (texts, ref) in enumerate(zip(groups, references, strict=True)):
        prompt = PromptRecord(f"p{g}", f"q{g}", (1,), reference=ref)
        out += [RewardSample(prompt, Completion(g, (1,), t, "stop")) for t in texts]
    return out


def test_agreement_with_the_group_majority() -> None:
    batch = samples(
        [["#### 4", "#### 4", "#### 5", "no answer"], ["#### 1/2", "#### 0.5", "#### 7"]],
        [None, None],
    )
    result = MajorityVoteReward().score(batch)
    # group 0: 4 wins 2:1 (no answer does not vote, scores 0); group 1: 1/2 == 0.5 win 2:1
    assert result.scores.tolist() == [1, 1, 0, 0, 1, 1, 0]
    assert float(result.metrics["agreement"]) == pytest.approx(4 / 7)
    assert float(result.metrics["majority_ratio"]) == pytest.approx((2 / 4 + 2 / 3) / 2)
    assert float(result.metrics["no_answer_rate"]) == pytest.approx(1 / 7)
    assert "label_accuracy" not in result.metrics  # no references: no label metrics


def test_tie_goes_to_the_answer_seen_first() -> None:
    result = MajorityVoteReward().score(samples([["#### 3", "#### 9", "#### 9", "#### 3"]], [None]))
    assert result.scores.tolist() == [1, 0, 0, 1]


def test_group_without_any_answer_scores_disagreement() -> None:
    reward = MajorityVoteReward(agree_score=1.0, disagree_score=-1.0)
    result = reward.score(samples([["none", "still none"], ["#### 2"]], [None, None]))
    assert result.scores.tolist() == [-1, -1, 1]
    assert float(result.metrics["majority_ratio"]) == pytest.approx(0.5)  # (0 + 1) / 2


def test_label_metrics_when_references_exist() -> None:
    batch = samples(
        [["#### 4", "#### 4", "#### 5"], ["#### 6", "#### 6", "#### 8"]],
        ["4", "8"],
    )
    m = MajorityVoteReward().score(batch).metrics
    assert float(m["label_accuracy"]) == 0.5  # group 0 majority 4 right, group 1 majority 6 wrong
    assert float(m["true_accuracy"]) == pytest.approx(3 / 6)
    # reward == truth: group 0 all three agree; group 1 none (6, 6 rewarded but wrong; 8 not)
    assert float(m["reward_accuracy"]) == pytest.approx(3 / 6)


def test_references_never_change_the_scores() -> None:
    texts = [["#### 4", "#### 5", "#### 5"]]
    with_labels = MajorityVoteReward().score(samples(texts, ["4"])).scores
    without = MajorityVoteReward().score(samples(texts, [None])).scores
    assert with_labels.tolist() == without.tolist() == [0, 1, 1]


def test_a_majority_below_min_share_is_not_a_label() -> None:
    # group 0: "4" holds 2 of 4 votes (0.5); group 1: "1" holds 3 of 4 (0.75)
    batch = samples(
        [["#### 4", "#### 4", "#### 5", "#### 6"], ["#### 1", "#### 1", "#### 1", "#### 2"]],
        [None, None],
    )
    strict = MajorityVoteReward(disagree_score=-1.0, min_share=0.6).score(batch)
    assert strict.scores.tolist() == [-1, -1, -1, -1, 1, 1, 1, -1]
    assert float(strict.metrics["untrusted_groups"]) == 0.5
    assert float(strict.metrics["majority_ratio"]) == pytest.approx((0.5 + 0.75) / 2)
    # at exactly the share the majority counts
    assert MajorityVoteReward(min_share=0.5).score(batch).scores.tolist() == [
        1,
        1,
        0,
        0,
        1,
        1,
        1,
        0,
    ]
    with pytest.raises(ValueError, match="min_share"):
        MajorityVoteReward(min_share=1.5)
