"""How many threads score the reward sources (torch-free; the scoring is in
:mod:`lightrft.application.source_scoring`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceConcurrency:
    """``max_workers`` sources scored at once (1: one after another, on the caller's
    thread); ``deadline_s``: how long a pooled source may take."""

    max_workers: int = 4
    deadline_s: float = 600.0

    def __post_init__(self) -> None:
        if self.max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {self.max_workers}")
        if not self.deadline_s > 0:
            raise ValueError(f"deadline_s must be > 0, got {self.deadline_s}")
