"""Scoring a retried request once: answers of recent requests by the client's request id.

A client that timed out retries, but the service may already have scored the first attempt
(or still be scoring it): without a memo the retry scores its samples again. A request that
carries ``request_id`` (the remote reward source sends one per request, the same on every
attempt) is scored once: a retry that arrives while the first attempt is scored waits for it,
one that arrives later gets the kept answer. The key is a hash of the whole request body, so
an id reused with other samples is another request. Keyed scoring is not cancelled when its
client leaves (the retry will want it); requests without an id keep the old behaviour (a
client that leaves before its batch is scored has its samples dropped). Failed scorings are
not kept: a retry scores again. At most ``capacity`` answers are kept, oldest evicted first.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class RequestMemo(Generic[T]):
    """See the module docstring. Used from one event loop."""

    def __init__(self, capacity: int = 4096) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._done: OrderedDict[str, T] = OrderedDict()
        self._running: dict[str, asyncio.Future[T]] = {}

    @staticmethod
    def key(request_id: str | None, body: bytes) -> str | None:
        """The memo key of a request (None: not memoized)."""
        return None if request_id is None else hashlib.sha256(body).hexdigest()

    async def run(self, key: str | None, score: Callable[[], Awaitable[T]]) -> T:
        """``score()``'s answer, computed once per ``key`` (every time for None)."""
        if key is None:
            return await score()
        if key in self._done:
            self._done.move_to_end(key)
            return self._done[key]
        running = self._running.get(key)
        if running is None:
            running = asyncio.ensure_future(score())
            self._running[key] = running
            running.add_done_callback(lambda done: self._finish(key, done))
        return await asyncio.shield(running)

    def _finish(self, key: str, done: asyncio.Future[T]) -> None:
        self._running.pop(key, None)
        if done.cancelled() or done.exception() is not None:
            return
        self._done[key] = done.result()
        while len(self._done) > self.capacity:
            self._done.popitem(last=False)
