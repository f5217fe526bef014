"""The tracker of ranks other than 0: records nothing (rank 0 alone writes the run's logs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class NullTracker:
    """A ``Tracker`` that records nothing."""

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """Ignores ``metrics``."""

    def log_samples(self, rows: Sequence[Mapping[str, Any]], step: int) -> None:
        """Ignores ``rows``."""

    def close(self) -> None:
        """Nothing to release."""
