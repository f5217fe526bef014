"""``InMemoryTracker``: the ``Tracker`` port as lists a test can read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class InMemoryTracker:
    """Keeps ``metrics`` as ``(step, {name: float})`` and ``samples`` as ``(step, rows)``.

    Logging after ``close`` raises ``RuntimeError``; records ``close_calls``.
    """

    def __init__(self) -> None:
        self.metrics: list[tuple[int, dict[str, float]]] = []
        self.samples: list[tuple[int, list[dict[str, Any]]]] = []
        self.closed = False
        self.close_calls = 0

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("InMemoryTracker used after close")

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """Records the metrics of ``step`` as Python floats (tensors are converted)."""
        self._check_open()
        self.metrics.append((step, {name: float(value) for name, value in metrics.items()}))

    def log_samples(self, rows: Sequence[Mapping[str, Any]], step: int) -> None:
        """Records copies of the rows of ``step``."""
        self._check_open()
        self.samples.append((step, [dict(row) for row in rows]))

    def close(self) -> None:
        """Marks the tracker closed (idempotent)."""
        self.close_calls += 1
        self.closed = True

    def series(self, name: str) -> list[tuple[int, float]]:
        """``(step, value)`` of metric ``name`` in logging order."""
        return [(step, m[name]) for step, m in self.metrics if name in m]

    def last(self, name: str) -> float:
        """The latest value of metric ``name`` (``KeyError`` if never logged)."""
        series = self.series(name)
        if not series:
            raise KeyError(f"metric {name!r} was never logged")
        return series[-1][1]
