"""Where the cycle gets each step's rollouts: a feed of version-tagged batches.

:class:`InlineRolloutFeed` is the colocated placement: the trainer generates, between its own
steps, every batch the staleness bound allows (time-sliced, nothing overlaps). With
``max_staleness`` 0 it generates the batch of step k at step k with the current policy:
exactly the synchronous cycle. The split placement's feed is
:class:`~lightrft.application.rollout_producer.ThreadedRolloutFeed`.

Metrics of a step (``async/*``): ``staleness_mean``/``_max`` of the batch trained on, ``queue_length``
(batches generated ahead after the take), ``trainer_wait_s`` (the trainer's time in
``take``: generating inline, waiting on the queue when split) and ``producer_idle_s`` (the
producer's time without generating since the previous take: inline, the time the trainer
trained).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from lightrft.application.experience_maker import CollectedRollout
from lightrft.application.rollout_queue import Tagged
from lightrft.domain.staleness import staleness, staleness_metrics, steps_to_produce

Produce = Callable[[int], Tagged[CollectedRollout]]


class RolloutFeed(Protocol):
    """Hands the cycle the batch of each step, tagged with its generating policy version."""

    def take(self, step: int, policy_version: int) -> Tagged[CollectedRollout]:
        """The batch of ``step``; the trainer's policy is at ``policy_version``."""
        ...

    def in_flight(self) -> list[tuple[int, int]]:
        """(step, version) of the batches generated ahead (lost at a restart)."""
        ...

    def restart(self, step: int) -> int:
        """Drops the batches generated ahead (resume at ``step``); returns how many."""
        ...

    def step_metrics(self) -> dict[str, float]:
        """The ``async/*`` metrics of the last take."""
        ...

    def close(self) -> None:
        """Stops producing (joins a producer, closes a remote engine)."""
        ...


class InlineRolloutFeed:
    """Colocated: ``produce(step)`` runs in the trainer when the bound allows (see module)."""

    def __init__(
        self,
        produce: Produce,
        max_staleness: int,
        last_step: int,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._produce, self.max_staleness, self.last_step = produce, max_staleness, last_step
        self._clock = clock
        self._ahead: dict[int, Tagged[CollectedRollout]] = {}
        self._next = 0
        self._left_take: float | None = None
        self._metrics: dict[str, float] = {}

    def take(self, step: int, policy_version: int) -> Tagged[CollectedRollout]:
        """Generates what the bound allows from ``step`` on, returns the batch of ``step``."""
        start = self._clock()
        idle = 0.0 if self._left_take is None else start - self._left_take
        self._next = max(self._next, step)
        for j in steps_to_produce(step, self.max_staleness, max(self.last_step, step)):
            if j >= self._next:
                self._ahead[j] = self._produce(j)
                self._next = j + 1
        tagged = self._ahead.pop(step)
        self._left_take = self._clock()
        lag = staleness(policy_version, tagged.version)
        self._metrics = {k: float(v) for k, v in staleness_metrics([lag]).items()}
        self._metrics.update(
            {
                "async/queue_length": float(len(self._ahead)),
                "async/trainer_wait_s": self._left_take - start,
                "async/producer_idle_s": idle,
            }
        )
        return tagged

    def in_flight(self) -> list[tuple[int, int]]:
        return sorted((t.step, t.version) for t in self._ahead.values())

    def restart(self, step: int) -> int:
        dropped = len(self._ahead)
        self._ahead.clear()
        self._next = step
        self._left_take = None
        return dropped

    def step_metrics(self) -> dict[str, float]:
        return dict(self._metrics)

    def close(self) -> None:
        self.restart(0)
