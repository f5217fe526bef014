"""Calls that run on their own daemon thread and report to one queue, so a caller can wait
for whichever finishes first, with a deadline.

A call that misses its deadline is abandoned: its thread is a daemon (it cannot keep the
process alive) and whatever it returns later is dropped. Python cannot kill a thread, so an
environment that never returns keeps one idle thread; the rollout goes on without it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

K = TypeVar("K")


@dataclass(frozen=True)
class CallResult(Generic[K]):
    """What a call returned (``value``) or raised (``error``), under the caller's ``key``."""

    key: K
    value: Any = None
    error: BaseException | None = None


class CallPool(Generic[K]):
    """Starts keyed calls and hands back their results as they finish."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._results: queue.Queue[CallResult[K]] = queue.Queue()
        self._deadlines: dict[K, float] = {}

    def start(self, key: K, deadline: float, fn: Callable[[], Any]) -> None:
        """Runs ``fn()`` on a daemon thread; its result is due by ``deadline`` (monotonic s)."""
        if key in self._deadlines:
            raise ValueError(f"{self._name}: call {key!r} is already running")
        self._deadlines[key] = deadline

        def run() -> None:
            try:
                self._results.put(CallResult(key, value=fn()))
            except BaseException as error:  # noqa: BLE001 - reported to the caller
                self._results.put(CallResult(key, error=error))

        threading.Thread(target=run, name=f"{self._name}-{key}", daemon=True).start()

    @property
    def pending(self) -> int:
        """Calls started and neither collected nor expired."""
        return len(self._deadlines)

    def collect(self, linger_s: float) -> tuple[list[CallResult[K]], list[K]]:
        """Waits for the first result (until the nearest deadline), then up to ``linger_s``
        more for others; returns the results and the keys whose deadline passed (their
        late results are dropped)."""
        results: list[CallResult[K]] = []
        first = True
        linger_until = float("inf")
        while self._deadlines:
            now = time.monotonic()
            until = min(min(self._deadlines.values()), linger_until)
            try:
                result = self._results.get(timeout=max(0.0, until - now))
            except queue.Empty:
                if not first or until >= linger_until:
                    break
                result = None
            if result is not None and result.key in self._deadlines:
                del self._deadlines[result.key]
                results.append(result)
                if first:
                    first = False
                    linger_until = time.monotonic() + linger_s
            expired = self._expire()
            if expired:
                return results, expired
        return results, self._expire()

    def _expire(self) -> list[K]:
        now = time.monotonic()
        expired = [key for key, deadline in self._deadlines.items() if deadline <= now]
        for key in expired:
            del self._deadlines[key]
        return expired
