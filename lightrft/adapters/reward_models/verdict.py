"""Strict parsers that turn a judge's generated verdict into a score, or refuse.

A parser returns a float or ``None`` (unparsable); it never guesses. Two kinds:

- :class:`ScoreVerdict`: a line ``Score: X`` or ``Score: X/Y`` (case-insensitive, optional
  ``Final``, ``**bold**`` markers, ``=`` instead of ``:``, a trailing period). X is read on
  the scale 0..``max_score`` (or 0..Y when the line gives Y) and returned as X / max in
  [0, 1]. Several score lines that disagree, a value outside the scale, or no such line:
  unparsable.
- :class:`LabelVerdict`: a bracketed label ``[[A]]`` whose score ``labels`` gives (e.g.
  ``{"A": 1.0, "B": 0.0}``, or ``{"GOOD": 1.0, "BAD": 0.0}``). Every bracketed label in the
  text must be the same known label; none, an unknown one, or two different ones: unparsable.

For judge training each kind also reads a row's ``label`` (``label_score``: the score a
correct verdict parses to, or ``ValueError``) and writes the verdict line of a label
(``verdict_text``): ``ScoreVerdict`` labels are numbers on its scale (``8`` ->
``Score: 8/10``), ``LabelVerdict`` labels are its label names (``"A"`` -> ``[[A]]``).
:data:`VERDICT_KINDS` builds a parser by kind name (the ``verdict`` of a ``generative_rm``
source).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from lightrft.domain.registry import Registry

_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_SCORE_LINE = re.compile(
    rf"^\W*(?:final\s+)?score\W*?\s*[:=]\s*\**\s*({_NUMBER})\s*(?:/\s*({_NUMBER}))?\s*\**\s*\.?\s*$",
    re.IGNORECASE,
)
_LABEL = re.compile(r"\[\[\s*([^\[\]]+?)\s*\]\]")


class VerdictParser(Protocol):
    """Text -> score, or ``None`` when the verdict cannot be read."""

    def parse(self, text: str) -> float | None: ...


@dataclass(frozen=True)
class ScoreVerdict:
    """``Score: X`` or ``Score: X/Y`` lines; returns X / scale in [0, 1]."""

    max_score: float = 10.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.max_score) and self.max_score > 0):
            raise ValueError(f"max_score must be positive, got {self.max_score}")

    def parse(self, text: str) -> float | None:
        values: set[float] = set()
        for line in text.splitlines():
            match = _SCORE_LINE.match(line.strip())
            if match is None:
                continue
            value = float(match.group(1))
            scale = float(match.group(2)) if match.group(2) is not None else self.max_score
            if scale <= 0 or not 0 <= value <= scale:
                return None
            values.add(value / scale)
        return values.pop() if len(values) == 1 else None

    def label_score(self, label: Any) -> float:
        """``label / max_score`` for a number on the scale 0..``max_score``."""
        ok = isinstance(label, int | float) and not isinstance(label, bool)
        if not (ok and math.isfinite(label) and 0 <= label <= self.max_score):
            raise ValueError(f"expected a number from 0 to {self.max_score:g}")
        return float(label) / self.max_score

    def verdict_text(self, label: Any) -> str:
        """The verdict line of ``label``: ``Score: X/max``."""
        self.label_score(label)
        return f"Score: {label:g}/{self.max_score:g}"


@dataclass(frozen=True)
class LabelVerdict:
    """``[[LABEL]]`` verdicts mapped to scores by ``labels`` (case-sensitive)."""

    labels: Mapping[str, float] = field(default_factory=lambda: {"A": 1.0, "B": 0.0})

    def __post_init__(self) -> None:
        if not self.labels:
            raise ValueError("labels must name at least one verdict")
        for label, score in self.labels.items():
            if not math.isfinite(score):
                raise ValueError(f"label {label!r} has a non-finite score {score}")

    def parse(self, text: str) -> float | None:
        found = set(_LABEL.findall(text))
        if len(found) != 1:
            return None
        (label,) = found
        return self.labels.get(label)

    def label_score(self, label: Any) -> float:
        """The score of a known label name."""
        if not isinstance(label, str) or label not in self.labels:
            raise ValueError(f"expected one of the labels {sorted(self.labels)}")
        return float(self.labels[label])

    def verdict_text(self, label: Any) -> str:
        """The verdict of ``label``: ``[[LABEL]]``."""
        self.label_score(label)
        return f"[[{label}]]"


class JudgeVerdict(VerdictParser, Protocol):
    """A parser that also reads a training row's label (see the module docstring)."""

    def label_score(self, label: Any) -> float: ...

    def verdict_text(self, label: Any) -> str: ...


VERDICT_KINDS: Registry[Any] = Registry("verdict kind")
"""Kind name -> ``(max_score, labels) -> JudgeVerdict``."""
VERDICT_KINDS.add("score", lambda max_score, labels: ScoreVerdict(max_score))
VERDICT_KINDS.add("label", lambda max_score, labels: LabelVerdict(labels))


def verdict_parser(
    kind: str, *, max_score: float = 10.0, labels: Mapping[str, float] | None = None
) -> JudgeVerdict:
    """The parser of verdict ``kind`` (``score`` reads ``max_score``, ``label`` ``labels``)."""
    factory = VERDICT_KINDS.get(kind)
    parser: JudgeVerdict = factory(max_score, dict(labels or {"A": 1.0, "B": 0.0}))
    return parser
