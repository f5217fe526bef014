"""A thread-safe queue of version-tagged rollouts, bounded by staleness, with deadlines.

The producer ``put``s the batch of step j (tagged with the policy version that generated
it); the trainer ``take``s the batch of its step. Every wait has a deadline that ends in
:class:`~lightrft.domain.async_errors.DeadlineExceededError` naming what it waited for; a
producer failure (``fail``) wakes the trainer with
:class:`~lightrft.domain.async_errors.ProducerDiedError`. Each side's waiting time is
summed (``idle_s``) for the ``async/*`` metrics.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from lightrft.domain.async_errors import DeadlineExceededError, ProducerDiedError

T = TypeVar("T")


@dataclass(frozen=True)
class Tagged(Generic[T]):
    """A batch for ``step`` generated with policy ``version``."""

    step: int
    version: int
    item: T


class RolloutQueue(Generic[T]):
    """At most ``capacity`` batches waiting; ``take`` returns them by step."""

    def __init__(self, capacity: int, clock: Callable[[], float] = time.monotonic) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._clock = clock
        self._items: dict[int, Tagged[T]] = {}
        self._cond = threading.Condition()
        self._failure: BaseException | None = None
        self._failed_step: int | None = None
        self.producer_idle_s = 0.0
        self.consumer_idle_s = 0.0
        self.max_length = 0

    def put(self, tagged: Tagged[T], timeout_s: float) -> None:
        """Adds a batch; waits (at most ``timeout_s``) while the queue is full; raises
        ``RuntimeError`` once the queue has failed or was closed (``fail``)."""
        with self._cond:
            waited = self._wait(
                lambda: len(self._items) < self.capacity or self._failure is not None,
                timeout_s,
                f"room in the rollout queue for the batch of step {tagged.step} "
                f"(capacity {self.capacity}; the trainer did not take a batch)",
            )
            self.producer_idle_s += waited
            if self._failure is not None:
                raise RuntimeError(f"the rollout queue is closed: {self._failure!r}")
            if tagged.step in self._items:
                raise ValueError(f"the batch of step {tagged.step} is already queued")
            self._items[tagged.step] = tagged
            self.max_length = max(self.max_length, len(self._items))
            self._cond.notify_all()

    def take(self, step: int, timeout_s: float) -> Tagged[T]:
        """Removes and returns the batch of ``step``; waits (at most ``timeout_s``) for it."""
        with self._cond:
            waited = self._wait(
                lambda: step in self._items or self._failure is not None,
                timeout_s,
                f"the rollout batch of step {step} from the producer",
            )
            self.consumer_idle_s += waited
            if step not in self._items:
                raise ProducerDiedError(
                    f"the rollout producer stopped while producing the batch of step "
                    f"{self._failed_step}: {self._failure!r}"
                ) from self._failure
            tagged = self._items.pop(step)
            self._cond.notify_all()
            return tagged

    def fail(self, error: BaseException, step: int | None) -> None:
        """Records the producer's failure (at ``step``); a waiting ``take`` raises at once."""
        with self._cond:
            self._failure, self._failed_step = error, step
            self._cond.notify_all()

    def waiting(self) -> list[tuple[int, int]]:
        """(step, version) of the queued batches, by step."""
        with self._cond:
            return sorted((t.step, t.version) for t in self._items.values())

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)

    def _wait(self, ready: Callable[[], bool], timeout_s: float, what: str) -> float:
        """Waits under the lock until ``ready()``; returns the seconds waited."""
        start = self._clock()
        deadline = start + timeout_s
        while not ready():
            left = deadline - self._clock()
            if left <= 0:
                raise DeadlineExceededError(what, self._clock() - start)
            self._cond.wait(left)
        return self._clock() - start
