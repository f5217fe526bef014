"""``ChoiceAnswerReward``: 1 when the response's first word is the reference answer, else 0.

For short-answer tasks (a colour, a count, "first" / "second"): the first word of the
response text, lower-cased and stripped of surrounding punctuation, is compared with the
reference, lower-cased and stripped. B samples; model output is never evaluated.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import torch

from lightrft.adapters.reward_parts.source_bases import RuleSource
from lightrft.domain.types import RewardResult, RewardSample

_STRIP = string.punctuation + string.whitespace


def first_word(text: str) -> str:
    """The first whitespace-separated word of ``text``, lower-case, punctuation stripped."""
    words = text.split()
    return words[0].strip(_STRIP).lower() if words else ""


class ChoiceAnswerReward(RuleSource):
    """``RewardSource`` for short answers; metric ``accuracy``."""

    def __init__(self, *, name: str = "choice") -> None:
        self._name = name

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,): 1.0 where the first word equals the reference, else 0.0."""
        hits = [
            s.prompt.reference is not None
            and first_word(s.completion.text) == s.prompt.reference.strip(_STRIP).lower()
            for s in samples
        ]
        scores = torch.tensor(hits, dtype=torch.float32)
        accuracy = scores.mean() if len(hits) else torch.tensor(0.0)
        return RewardResult(scores, {"accuracy": accuracy})

    def close(self) -> None:
        """Nothing to release (a rule)."""
