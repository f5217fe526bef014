"""Step-labelled solutions: the training rows of a process reward model (PRM).

A solution to ``prompt`` is split into reasoning ``steps``; ``labels`` holds one label per
step: 1.0 for a correct step and 0.0 for a wrong one (Math-Shepherd's ``+`` / ``-``), or the
number the data set gives (a soft label, or PRM800K's -1 / 0 / +1 rating).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class StepLabelledSolution:
    """One solution of ``prompt`` as ``steps``, each with its label (same order)."""

    uid: str
    prompt: str
    steps: tuple[str, ...]
    labels: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.steps:
            raise ValueError(f"{self.uid}: a step-labelled solution needs at least one step")
        if len(self.labels) != len(self.steps):
            raise ValueError(
                f"{self.uid}: {len(self.labels)} labels for {len(self.steps)} steps; "
                "need one label per step"
            )
        bad = [x for x in self.labels if not math.isfinite(x)]
        if bad:
            raise ValueError(f"{self.uid}: step labels must be finite numbers, got {bad}")
