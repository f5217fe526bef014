"""``MajorityVoteReward``: test-time RL (TTRL, Zuo et al. 2025, arXiv:2504.16084).

A label-free reward: within each group (the samples of one prompt in a ``score`` call,
:attr:`RewardSample.group`) the extracted answers vote, and a sample scores
``agree_score`` when its answer is the majority answer, ``disagree_score`` otherwise. Any
advantage estimator can use it (it is an ordinary reward source).

Rules (:func:`~lightrft.domain.eval_metrics.majority_vote`): a sample without an extractable
answer does not vote and scores ``disagree_score``; a tie goes to the tied answer that
appeared first in the group; a group where no sample has an answer scores
``disagree_score`` throughout. Answers are compared through the grader's keys
(equivalent answers, e.g. ``0.5`` and ``1/2``, share one).

``min_share``: a majority held by fewer than this fraction of the group's samples is not
trusted as a label: the whole group scores ``disagree_score`` (all-equal rewards, so no
gradient from it). Confidence filtering of the pseudo-labels; 0 (the default) is TTRL as
published. Measured on the built-in task (docs/results.md): a majority of 3 or more votes of
8 was right 0.25 of the time where the greedy answer was right 0.04 of the time.

References are never used for the scores. When every prompt of a call has one, the metrics
also say how good the pseudo-labels are: ``label_accuracy`` (groups whose majority answer is
correct), ``reward_accuracy`` (samples whose majority-vote reward equals their true
correctness) and ``true_accuracy`` (samples that are correct).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import torch

from lightrft.adapters.reward_parts.source_bases import RuleSource
from lightrft.domain.eval_metrics import GradedAnswer, majority_vote
from lightrft.domain.ports import AnswerGrader
from lightrft.domain.types import RewardResult, RewardSample


class MajorityVoteReward(RuleSource):
    """``RewardSource`` of agreement with the group's majority answer (see the module doc)."""

    def __init__(
        self,
        grader: AnswerGrader | None = None,
        *,
        name: str = "ttrl",
        agree_score: float = 1.0,
        disagree_score: float = 0.0,
        min_share: float = 0.0,
    ) -> None:
        if not (math.isfinite(agree_score) and math.isfinite(disagree_score)):
            raise ValueError("agree_score and disagree_score must be finite")
        if not 0.0 <= min_share <= 1.0:
            raise ValueError(f"min_share must be in [0, 1], got {min_share}")
        self.min_share = min_share
        if grader is None:
            from lightrft.adapters.rewards.answer_grader import MathAnswerGrader

            grader = MathAnswerGrader()
        self.grader, self._name = grader, name
        self.agree_score, self.disagree_score = agree_score, disagree_score

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) float32: agreement with the majority answer of each sample's group."""
        keys = [self.grader.grade(s.completion.text, None).key for s in samples]
        groups: dict[int, list[int]] = defaultdict(list)
        for index, sample in enumerate(samples):
            groups[sample.group].append(index)
        agree = [False] * len(samples)
        winners: dict[int, int | None] = {}
        ratios = []
        untrusted = 0
        for group, members in groups.items():
            winner = majority_vote([keys[i] for i in members])
            winners[group] = None if winner is None else members[winner]
            if winner is None:
                ratios.append(0.0)
                continue
            label = keys[members[winner]]
            share = sum(keys[i] == label for i in members) / len(members)
            ratios.append(share)
            if share < self.min_share:
                untrusted += 1
                continue
            for i in members:
                agree[i] = keys[i] == label
        scores = torch.tensor(
            [self.agree_score if a else self.disagree_score for a in agree], dtype=torch.float32
        )
        count = max(len(samples), 1)
        metrics = {
            "agreement": torch.tensor(sum(agree) / count),
            "majority_ratio": torch.tensor(sum(ratios) / max(len(ratios), 1)),
            "no_answer_rate": torch.tensor(sum(k is None for k in keys) / count),
            "untrusted_groups": torch.tensor(untrusted / max(len(groups), 1)),
        }
        if samples and all(s.prompt.reference is not None for s in samples):
            metrics.update(self._label_metrics(samples, agree, winners))
        return RewardResult(scores=scores, metrics=metrics)

    def _label_metrics(
        self,
        samples: Sequence[RewardSample],
        agree: list[bool],
        winners: dict[int, int | None],
    ) -> dict[str, torch.Tensor]:
        truth = [self._correct(s) for s in samples]
        labels = [winner is not None and truth[winner] for winner in winners.values()]
        return {
            "label_accuracy": torch.tensor(sum(labels) / len(labels)),
            "reward_accuracy": torch.tensor(
                sum(a == t for a, t in zip(agree, truth, strict=True)) / len(samples)
            ),
            "true_accuracy": torch.tensor(sum(truth) / len(samples)),
        }

    def _correct(self, sample: RewardSample) -> bool:
        graded: GradedAnswer = self.grader.grade(sample.completion.text, sample.prompt.reference)
        return bool(graded.correct)

    def close(self) -> None:
        """Nothing to release (the grader runs in this process)."""
