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

With partial rollouts (``partial_rollouts``, :mod:`partial_generation`) the producer's
engine generates in chunks and calls :meth:`ThreadedRolloutFeed.load_newest_weights` between
them: a version the trainer published meanwhile is loaded (verified) and the unfinished
samples continue with it; the step's ``async/staleness_*`` are then over tokens.

Every wait has a deadline (``queue_timeout_s``); a producer error (a dead engine process, a
checksum mismatch, a deadline) is handed to the trainer, whose ``take`` raises
:class:`~lightrft.domain.async_errors.ProducerDiedError` with it as the cause. ``close``
stops the producer deterministically: a stop flag, a join bounded by
``shutdown_timeout_s``, then the engine is closed (a process engine is killed, which ends a
call the producer is stuck in) and, if the thread still runs, a
:class:`~lightrft.domain.async_errors.DeadlineExceededError` names what it was doing.
"""

from __future__ import annotations

import inspect
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
from lightrft.domain.partial_rollout import token_staleness_metrics
from lightrft.domain.ports import RolloutEngine
from lightrft.domain.staleness import may_start, staleness, staleness_metrics

log = structlog.get_logger(__name__)

Snapshot = list[tuple[str, Tensor]]


class ProducerStoppedError(RuntimeError):
    """Raised in the producer thread, between chunks, once the feed is closing."""


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
        self._closed = False
        self._reached = -1
        self._published: tuple[int, Snapshot] | None = None
        self._engine_version: int | None = None
        self._producing: tuple[int, int] | None = None  # (step, version) being generated
        self._busy_s = 0.0
        self._metrics: dict[str, float] = {}

    # -- trainer side -------------------------------------------------------------------

    def take(self, step: int, policy_version: int) -> Tagged[CollectedRollout]:
        """Publishes the trainer's weights if they changed, then waits for batch ``step``."""
        if self._closed:
            raise RuntimeError("the rollout feed was closed (its engine too); build a new one")
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
        self._metrics = _staleness(policy_version, tagged)
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
        self._stop_producer(close_engine=False)
        self._reached = step - 1
        return dropped

    def step_metrics(self) -> dict[str, float]:
        return dict(self._metrics)

    @property
    def running(self) -> bool:
        """Whether the producer thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def close(self) -> None:
        """Stops the producer and closes its engine (see the module docstring); the feed
        cannot run again."""
        self._closed = True
        self._stop_producer(close_engine=True)

    def _stop_producer(self, *, close_engine: bool) -> None:
        thread, deadline = self._thread, self.params.shutdown_timeout_s
        started = time.monotonic()
        if thread is not None:
            with self._cond:
                self._stop = True
                self._cond.notify_all()
            self._queue.fail(RuntimeError("the feed was closed"), None)  # frees a blocked put
            thread.join(deadline)
        if close_engine:  # a process engine is killed: a call stuck in it ends
            _close_engine(self.ports.engine, min(deadline, 5.0))
            if thread is not None and thread.is_alive():
                thread.join(min(deadline, 5.0))
        if thread is not None and thread.is_alive():
            with self._cond:
                doing = self._producing
            what = (
                ""
                if doing is None
                else f" (generating the batch of step {doing[0]} with policy version {doing[1]})"
            )
            raise DeadlineExceededError(
                f"the rollout producer thread to stop{what}", time.monotonic() - started
            )
        self._thread, self._producing = None, None
        self._queue = RolloutQueue(self.params.max_staleness + 1)

    def load_newest_weights(self) -> int:
        """Producer thread: loads the newest published weights into the engine when they are
        newer than what it holds (verified); returns the version the engine holds. Raises
        :class:`ProducerStoppedError` once the feed is closing."""
        with self._cond:
            if self._stop:
                raise ProducerStoppedError("the rollout feed is closing")
            published = self._published
        if published is None:
            raise RuntimeError("the trainer has published no weights yet")
        version, weights = published
        if self._engine_version != version:
            sync_engine_weights(
                self.ports.engine, weights, version, verify=self.params.verify_weight_sync
            )
            self._engine_version = version
        return version

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
                if not self._wait_for_turn(step):
                    return
                version = self.load_newest_weights()
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

    def _wait_for_turn(self, step: int) -> bool:
        """Waits until the bound allows batch ``step`` and weights exist (``False``: stop)."""
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
            return not self._stop


def _close_engine(engine: RolloutEngine, timeout_s: float) -> None:
    """Closes an engine that can be closed (``close(timeout_s=...)`` when it takes one)."""
    closing = getattr(engine, "close", None)
    if not callable(closing):
        return
    if "timeout_s" in inspect.signature(closing).parameters:
        closing(timeout_s=timeout_s)
    else:
        closing()


def _staleness(trained_version: int, tagged: Tagged[CollectedRollout]) -> dict[str, float]:
    """``async/staleness_*`` of a batch: over its tokens when they carry versions (partial
    rollouts), else of the batch's one version."""
    tags = [c.token_versions for c in tagged.item.rollout.completions]
    if tags and all(t is not None for t in tags):
        metrics = token_staleness_metrics(trained_version, [t for t in tags if t is not None])
    else:
        metrics = staleness_metrics([staleness(trained_version, tagged.version)])
    return {k: float(v) for k, v in metrics.items()}
