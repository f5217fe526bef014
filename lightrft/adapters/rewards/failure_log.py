"""Rate-limited warnings about samples a reward source could not score.

A source that fails on every sample would print one warning per sample, thousands a step.
:class:`FailureLog` collects one ``score`` call's failures: the first ``limit`` are logged
one by one (``reward.function.failed``, ...), the rest only counted, and
:meth:`FailureLog.summarize` logs one ``<prefix>.failures`` line per call (that is, per step)
with the counts by kind.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import structlog

log = structlog.get_logger(__name__)


class FailureLog:
    """Failures of one ``score`` call of source ``source``; events named ``prefix.<kind>``."""

    def __init__(self, prefix: str, source: str, *, limit: int = 3) -> None:
        self.prefix, self.source, self.limit = prefix, source, limit
        self.by_kind: Counter[str] = Counter()

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    def record(self, kind: str, *, count: int = 1, **fields: Any) -> None:
        """Counts ``count`` failed samples (one call that scored them all); logs it while
        fewer than ``limit`` were logged."""
        logged = self.total
        self.by_kind[kind] += count
        if logged < self.limit:
            log.warning(f"{self.prefix}.{kind}", source=self.source, **fields)

    def summarize(self, samples: int) -> None:
        """One line with the counts, if anything failed (``not_shown`` were not logged)."""
        if not self.total:
            return
        log.warning(
            f"{self.prefix}.failures",
            source=self.source,
            failed=self.total,
            samples=samples,
            by_kind=dict(sorted(self.by_kind.items())),
            not_shown=max(self.total - self.limit, 0),
        )
