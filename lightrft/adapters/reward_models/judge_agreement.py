"""``JudgeAgreementReward``: the reward of a generative judge trained by RL (``judge_agreement``).

The policy is the judge: its completion is a judgement of a pairwise judge prompt
(:mod:`~lightrft.adapters.datasets.judge_pairs`), and the prompt's reference is the verdict
label that agrees with the human preference (``A`` / ``B``). As the original LightRFT's
``grm_vl_rl`` reward, a judgement scores ``accuracy + format_weight x format``:

- accuracy: 1 when the verdict, read by the strict label parser
  (:class:`~lightrft.adapters.reward_models.verdict.LabelVerdict`, every ``[[X]]`` in the
  text the same known label; or with ``verdict="answer"`` the original's
  ``<answer>Video 1 is better</answer>``,
  :class:`~lightrft.adapters.reward_models.answer_verdict.AnswerVerdict`), is the
  reference's label; an unparsable verdict scores 0 and is counted (``unparsable``);
- format: 1 when a ``<think>...</think>`` block closes before the verdict (the verdict
  parses from the text after ``</think>``), else 0 (the original checks that its think
  block ends before its answer block).

The original weighs both 1.0 (``format_weight: 1``). Metrics: ``agreement`` (the accuracy
rate), ``format_rate``, ``unparsable``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from lightrft.adapters.reward_models.answer_verdict import AnswerVerdict
from lightrft.adapters.reward_models.verdict import LabelVerdict
from lightrft.adapters.reward_parts.source_bases import RuleSource
from lightrft.domain.types import RewardResult, RewardSample

VERDICT_FORMS: dict[str, Callable[[Mapping[str, float]], Any]] = {
    "brackets": LabelVerdict,  # [[A]] / [[B]]
    "answer": AnswerVerdict,  # the original's <answer>Video 1 is better</answer>
}
"""How a judgement names its verdict, by the ``verdict`` option."""


class JudgeAgreementReward(RuleSource):
    """``RewardSource`` scoring a judge's verdict against the preference label (module doc)."""

    def __init__(
        self,
        *,
        name: str = "judge_agreement",
        labels: Sequence[str] = ("A", "B"),
        format_weight: float = 1.0,
        think_tag: str = "think",
        verdict: str = "brackets",
    ) -> None:
        if len(set(labels)) < 2:
            raise ValueError(f"a pairwise judge needs at least two labels, got {list(labels)}")
        if verdict not in VERDICT_FORMS:
            raise ValueError(f"verdict must be one of {sorted(VERDICT_FORMS)}, got {verdict!r}")
        self._name, self.format_weight = name, format_weight
        self._labels = {label: float(i) for i, label in enumerate(labels)}
        self._verdict = VERDICT_FORMS[verdict](self._labels)
        self._think = re.compile(
            rf"<{re.escape(think_tag)}>.*?</{re.escape(think_tag)}>", re.DOTALL
        )

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) float32; each sample's prompt needs a reference label."""
        verdicts = [self._verdict.parse(s.completion.text) for s in samples]
        gold = [self._gold(s.prompt.reference, s.prompt.uid) for s in samples]
        correct = [float(v is not None and v == g) for v, g in zip(verdicts, gold, strict=True)]
        formatted = [float(self._formatted(s.completion.text)) for s in samples]
        scores = torch.tensor(correct) + self.format_weight * torch.tensor(formatted)
        count = max(len(samples), 1)
        metrics: Mapping[str, torch.Tensor] = {
            "agreement": torch.tensor(sum(correct) / count),
            "format_rate": torch.tensor(sum(formatted) / count),
            "unparsable": torch.tensor(float(sum(v is None for v in verdicts))),
        }
        return RewardResult(scores=scores.to(torch.float32), metrics=dict(metrics))

    def agrees(self, judgement: str, label: str) -> bool:
        """Whether the verdict of ``judgement`` is ``label`` (unparsable: no)."""
        return self._verdict.parse(judgement) == self._gold(label, "a judgement")

    def _gold(self, reference: str | None, uid: str) -> float:
        if reference is None or reference.strip() not in self._labels:
            raise ValueError(
                f"prompt {uid!r}: reference {reference!r} is not a verdict label "
                f"{sorted(self._labels)} (judge prompts: data.*.preprocessor=judge_pairs)"
            )
        return self._labels[reference.strip()]

    def _formatted(self, text: str) -> bool:
        match = self._think.search(text)
        return match is not None and self._verdict.parse(text[match.end() :]) is not None

    def close(self) -> None:
        """Nothing to release."""
