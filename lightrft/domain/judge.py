"""Generative-judge training data and its held-out measure.

A :class:`JudgedResponse` is one training row of a generative judge: a (rendered) prompt, a
response to it, an optional reference answer, the judge's answer text to learn (reasoning
ending in a verdict) and ``score``, the value the verdict parser must read from a correct
verdict. :func:`verdict_accuracy` compares parsed verdicts with those scores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

SCORE_TOLERANCE = 1e-6
"""Parsed and expected scores closer than this count as the same verdict."""


@dataclass(frozen=True)
class JudgedResponse:
    """One judge training row: ``judgement`` is what the judge should write for
    (``prompt``, ``response``, ``reference``); ``score`` is what its verdict parses to."""

    uid: str
    prompt: str
    response: str
    judgement: str
    score: float
    reference: str = ""

    def __post_init__(self) -> None:
        if not self.judgement:
            raise ValueError(f"judge row {self.uid!r} has an empty judgement")
        if not math.isfinite(self.score):
            raise ValueError(f"judge row {self.uid!r} has a non-finite score {self.score}")


@dataclass(frozen=True)
class VerdictAccuracy:
    """``accuracy``: fraction of rows whose verdict parsed to the expected score;
    ``unparsable_rate``: fraction whose verdict could not be parsed (those count as wrong)."""

    rows: int
    correct: int
    unparsable: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.rows if self.rows else 0.0

    @property
    def unparsable_rate(self) -> float:
        return self.unparsable / self.rows if self.rows else 0.0


def verdict_accuracy(
    parsed: Sequence[float | None],
    expected: Sequence[float],
    tolerance: float = SCORE_TOLERANCE,
) -> VerdictAccuracy:
    """Counts verdicts equal (within ``tolerance``) to the expected scores.

    ``parsed[i]`` is the parser's reading of verdict i (``None``: unparsable, wrong).
    """
    if len(parsed) != len(expected):
        raise ValueError(f"{len(parsed)} parsed verdicts but {len(expected)} expected scores")
    correct = sum(
        p is not None and abs(p - e) <= tolerance for p, e in zip(parsed, expected, strict=True)
    )
    return VerdictAccuracy(len(parsed), correct, sum(p is None for p in parsed))
