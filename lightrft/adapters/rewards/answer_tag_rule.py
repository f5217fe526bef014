"""``AnswerTagRule``: the original LightRFT's R1-AQA reward (``avqa_rule``).

B samples. A response scores ``accuracy + format`` (at most 2, R1-AQA's sum):

- accuracy: 1 when the first ``<answer>...</answer>`` on one line (else the whole response),
  stripped, is the reference, stripped, or when both are the same number; else 0;
- format: 1 when the response ends with a ``<answer>...</answer>`` block, else 0.

The original also tried math-verify on the whole response first; for R1-AQA's
multiple-choice answers (option texts) the exact match is what decides. Both checks read
the response only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import torch

from lightrft.adapters.reward_parts.source_bases import RuleSource
from lightrft.adapters.rewards.answer_equivalence import numeric_values
from lightrft.domain.types import RewardResult, RewardSample

_ANSWER = re.compile(r"<answer>(.*?)</answer>")
_FORMAT = re.compile(r".*?<answer>.*?</answer>", re.DOTALL)


def tagged_answer(response: str) -> str:
    """The content of the first one-line ``<answer>`` block, else the response, stripped."""
    match = _ANSWER.search(response)
    return (match.group(1) if match else response).strip()


def ends_with_answer(response: str) -> bool:
    """Whether ``response`` ends with an ``<answer>...</answer>`` block."""
    return _FORMAT.fullmatch(response) is not None


class AnswerTagRule(RuleSource):
    """``RewardSource`` of R1-AQA's rule (module docstring). Metrics: ``accuracy``,
    ``format_rate``."""

    def __init__(self, *, name: str = "avqa_rule") -> None:
        self._name = name

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) float32; each sample needs a reference."""
        correct = [self._correct(s) for s in samples]
        formatted = [ends_with_answer(s.completion.text) for s in samples]
        scores = torch.tensor(correct, dtype=torch.float32) + torch.tensor(
            formatted, dtype=torch.float32
        )
        count = max(len(samples), 1)
        metrics = {
            "accuracy": torch.tensor(sum(correct) / count),
            "format_rate": torch.tensor(sum(formatted) / count),
        }
        return RewardResult(scores=scores, metrics=metrics)

    def _correct(self, sample: RewardSample) -> bool:
        reference = sample.prompt.reference
        if reference is None:
            raise ValueError(f"prompt {sample.prompt.uid!r} has no reference answer to check")
        answer, gold = tagged_answer(sample.completion.text), reference.strip()
        if answer == gold:
            return True
        values, gold_values = numeric_values(answer), numeric_values(gold)
        return bool(values and gold_values and values & gold_values)

    def close(self) -> None:
        """Nothing to release."""
