"""``MultiTracker``: fans every call out to several trackers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lightrft.domain.ports import Tracker


class MultiTracker:
    """Forwards each call to ``trackers`` in order; ``close`` closes all of them even if
    some fail, then re-raises the first failure."""

    def __init__(self, trackers: Sequence[Tracker]) -> None:
        self.trackers = tuple(trackers)

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """``log_metrics`` on every tracker."""
        for tracker in self.trackers:
            tracker.log_metrics(metrics, step)

    def log_samples(self, rows: Sequence[Mapping[str, Any]], step: int) -> None:
        """``log_samples`` on every tracker."""
        for tracker in self.trackers:
            tracker.log_samples(rows, step)

    def close(self) -> None:
        """``close`` on every tracker; the first exception is raised after all were tried."""
        errors: list[BaseException] = []
        for tracker in self.trackers:
            try:
                tracker.close()
            except Exception as error:
                errors.append(error)
        if errors:
            raise errors[0]
