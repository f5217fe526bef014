"""``TokenTextTracker``: adds the text of each response token to logged sample rows.

A Tracker decorator: rows with ``token_ids`` get ``tokens``, one decoded string per id (what
the trajectory browser shades by log-prob, entropy or advantage). Metrics pass through.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lightrft.domain.ports import Tracker


class TokenTextTracker:
    """Forwards to ``inner``; ``decode_token(id)`` gives one token's text."""

    def __init__(self, inner: Tracker, decode_token: Callable[[int], str]) -> None:
        self.inner, self.decode_token = inner, decode_token

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """Forwards to ``inner``."""
        self.inner.log_metrics(metrics, step)

    def log_samples(self, rows: Sequence[Mapping[str, Any]], step: int) -> None:
        """Forwards rows to ``inner``, with ``tokens`` added where ``token_ids`` exist."""
        self.inner.log_samples([self._with_tokens(row) for row in rows], step)

    def _with_tokens(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        ids = row.get("token_ids")
        if ids is None or "tokens" in row:
            return row
        return {**row, "tokens": [self.decode_token(int(i)) for i in ids]}

    def close(self) -> None:
        """Closes ``inner``."""
        self.inner.close()
