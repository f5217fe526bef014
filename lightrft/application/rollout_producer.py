"""The split placement's feed: a producer thread generates into a staleness-bounded queue
while the trainer trains.

The engine runs elsewhere (another process, other devices: any ``RolloutEngine``); this
thread only drives it. Per batch j the producer waits until the trainer has reached step
j - S (:func:`~lightrft.domain.staleness.may_start`), loads the newest weights the trainer
published (verified by checksum), collects the batch and puts it in a
:class:`~lightrft.application.rollout_queue.RolloutQueue` of capacity S + 1. The trainer,
at each step, publishes its weights when its policy version changed, then takes its batch.
With S = 0 batch j is generated with exactly the weights that train on it: the synchronous
cycle, through the asynchronous path.

Every wait has a deadline (``queue_timeout_s``); a producer error (a dead engine process, a
checksum mismatch, a deadline) is handed to the trainer, whose ``take`` raises
:class:`~lightrft.domain.async_errors.ProducerDiedError` with it as the cause.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from torch import Tensor

from lightrft.application.experience_maker import CollectedRollout
from lightrft.application.off_policy_params import OffPolicyParams
from lightrft.application.rollout_queue import RolloutQueue, Tagged
from lightrft.application.weight_sync import sync_engine_weights
from lightrft.domain.async_errors import DeadlineExceededError
from lightrft.domain.ports import RolloutEngine
from lightrft.domain.staleness import may_start, staleness, staleness_metrics

log = structlog.get_logger(__name__)

Snapshot = list[tuple[str, Tensor]]


@dataclass(frozen=True)
class ProducerPorts:
    """What the producer drives: the engine, how to collect the batch of a step (with that
    engine, no phase switches), and how to snapshot the trainer's weights (trainer thread)."""

    engine: RolloutEngine
    collect: Callable[[int], CollectedRollout]
    snapshot: Callable[[], Snapshot]


class ThreadedRolloutFeed:
    """See the module docstring; implements :class:`~lightrft.application.rollout_feed.RolloutFeed`."""

    def __init__(self, ports: ProducerPorts, params: OffPolicyParams, last_step: int) -> None:
        self.ports, self.params, self.last_step = ports, params, last_step
        self._cond = threading.Condition()
        self._queue: RolloutQueue[CollectedRollout] = RolloutQueue(params.max_staleness + 1)
        self._thread: threading.Thread | None = None
        self._stop = False
        self._reached = -1
        self._published: tuple[int, Snapshot] | None = None
        self._engine_version: int | None = None
        self._producing: tuple[int, int] | None = None  # (step, version) being generated
        self._busy_s = 0.0
        self._metrics: dict[str, float] = {}

    # -- trainer side -------------------------------------------------------------------

    def take(self, step: int, policy_version: int) -> Tagged[CollectedRollout]:
        """Publishes the trainer's weights if they changed, then waits for batch ``step``."""
        if self._thread is None:
            self._start(step)
        if self._published is None or self._published[0] != policy_version:
            weights = self.ports.snapshot()
            with self._cond:
                self._published = (policy_version, weights)
        with self._cond:
            self._reached = step
            self._cond.notify_all()
        idle_before = self._queue.producer_idle_s
        wait_before = self._queue.consumer_idle_s
        tagged = self._queue.take(step, self.params.queue_timeout_s)
        lag = staleness(policy_version, tagged.version)
        self._metrics = {k: float(v) for k, v in staleness_metrics([lag]).items()}
        with self._cond:
            busy, self._busy_s = self._busy_s, 0.0
        self._metrics.update(
            {
                "async/queue_length": float(len(self._queue)),
                "async/queue_max_length": float(self._queue.max_length),
                "async/trainer_wait_s": self._queue.consumer_idle_s - wait_before,
                "async/producer_idle_s": self._queue.producer_idle_s - idle_before,
                "async/producer_busy_s": busy,
            }
        )
        return tagged

    def in_flight(self) -> list[tuple[int, int]]:
        waiting = self._queue.waiting()
        with self._cond:
            producing = [self._producing] if self._producing is not None else []
        return sorted(waiting + producing)

    def restart(self, step: int) -> int:
        dropped = len(self.in_flight())
        self.close()
        self._queue = RolloutQueue(self.params.max_staleness + 1)
        self._reached = step - 1
        return dropped

    def step_metrics(self) -> dict[str, float]:
        return dict(self._metrics)

    @property
    def running(self) -> bool:
        """Whether the producer thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def close(self) -> None:
        """Stops the producer after its current call (bounded by the engine's deadlines)."""
        thread = self._thread
        if thread is None:
            return
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._queue.fail(RuntimeError("the feed was closed"), None)  # frees a blocked put
        thread.join(self.params.queue_timeout_s)
        if thread.is_alive():
            raise DeadlineExceededError(
                "the rollout producer thread to stop", self.params.queue_timeout_s
            )
        self._thread = None
        self._queue = RolloutQueue(self.params.max_staleness + 1)

    # -- producer side ------------------------------------------------------------------

    def _start(self, step: int) -> None:
        self._stop = False
        self._reached = step - 1
        self._thread = threading.Thread(
            target=self._produce, args=(step,), name="lightrft-rollout-producer", daemon=True
        )
        self._thread.start()

    def _produce(self, first: int) -> None:
        step: int | None = first
        try:
            for step in range(first, self.last_step + 1):
                published = self._wait_for_turn(step)
                if published is None:
                    return
                version, weights = published
                if self._engine_version != version:
                    sync_engine_weights(
                        self.ports.engine, weights, version, verify=self.params.verify_weight_sync
                    )
                    self._engine_version = version
                with self._cond:
                    self._producing = (step, version)
                started = time.perf_counter()
                collected = self.ports.collect(step)
                with self._cond:
                    self._busy_s += time.perf_counter() - started
                    self._producing = None
                    if self._stop:
                        return
                self._queue.put(Tagged(step, version, collected), self.params.queue_timeout_s)
        except BaseException as error:
            if not self._stop:
                log.error("async.producer_failed", step=step, error=repr(error))
                self._queue.fail(error, step)

    def _wait_for_turn(self, step: int) -> tuple[int, Snapshot] | None:
        """The weights to generate batch ``step`` with, once the bound allows (``None``: stop)."""
        S = self.params.max_staleness
        with self._cond:
            start = time.monotonic()
            while not self._stop and not (
                may_start(step, self._reached, S) and self._published is not None
            ):
                left = self.params.queue_timeout_s - (time.monotonic() - start)
                if left <= 0:
                    raise DeadlineExceededError(
                        f"the trainer to reach step {step - S} (batch {step}, max_staleness {S})",
                        time.monotonic() - start,
                    )
                self._cond.wait(left)
            self._queue.producer_idle_s += time.monotonic() - start
            return None if self._stop else self._published
