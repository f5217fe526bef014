"""Micro-batching of concurrent score requests on the server.

Requests wait in a queue; one worker takes the first, then keeps taking requests for up to
``window_s`` seconds or until ``max_samples`` samples are gathered, scores them with one
call of the source (in a worker thread, so the event loop keeps accepting requests), and
hands each request its own slice of the scores. The source is called by one thread at a time,
or by up to ``max_concurrent`` (a source that runs its own work in parallel under a bound of its
own, like ``unit_tests``: while one batch is scored the next is gathered and scored too).

Requests whose caller is gone (their future cancelled: the client disconnected) are dropped
before the batch is scored. When a merged batch fails, each of its requests is scored on its
own, so a bad sample fails only the request that holds it (with an error that numbers the
samples within that request).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from lightrft.domain.types import RewardResult, RewardSample

log = structlog.get_logger(__name__)


@dataclass
class _Pending:
    samples: Sequence[RewardSample]
    future: asyncio.Future[tuple[list[float], dict[str, float]]]


@dataclass
class BatcherStats:
    """Counts since start: requests and samples scored, source calls (batches), failed
    requests, the largest batch, requests dropped because their caller was gone, and merged
    batches that failed and were scored request by request."""

    requests: int = 0
    samples: int = 0
    batches: int = 0
    errors: int = 0
    largest_batch: int = 0
    abandoned: int = 0
    isolated: int = 0


class MicroBatcher:
    """Merges concurrent requests into source calls of at most ``max_samples`` samples."""

    def __init__(
        self,
        score: Callable[[Sequence[RewardSample]], RewardResult],
        *,
        max_samples: int = 64,
        window_s: float = 0.005,
        max_concurrent: int = 1,
    ) -> None:
        if max_samples < 1:
            raise ValueError(f"max_samples must be >= 1, got {max_samples}")
        if max_concurrent < 1:
            raise ValueError(f"max_concurrent must be >= 1, got {max_concurrent}")
        if window_s < 0:
            raise ValueError(f"window_s must be >= 0, got {window_s}")
        self._score_fn = score
        self._max_samples = max_samples
        self._window_s = window_s
        self._queue: asyncio.Queue[_Pending] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._carry: _Pending | None = None  # a request that did not fit the last batch
        self._max_concurrent = max_concurrent
        self._in_flight: set[asyncio.Task[None]] = set()
        self.stats = BatcherStats()

    def start(self) -> None:
        """Starts the worker on the running event loop."""
        self._queue = asyncio.Queue()
        self._worker = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Cancels the worker and the batches in flight."""
        for task in (self._worker, *self._in_flight):
            if task is None:
                continue
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def submit(self, samples: Sequence[RewardSample]) -> tuple[list[float], dict[str, float]]:
        """Scores and metrics of ``samples`` (raises what the source raised)."""
        if self._queue is None:
            raise RuntimeError("the batcher is not started")
        future: asyncio.Future[tuple[list[float], dict[str, float]]] = (
            asyncio.get_running_loop().create_future()
        )
        await self._queue.put(_Pending(samples, future))
        return await future

    async def _gather(self) -> list[_Pending]:
        assert self._queue is not None
        first, self._carry = self._carry, None
        batch = [first if first is not None else await self._queue.get()]
        size = len(batch[0].samples)
        deadline = time.monotonic() + self._window_s
        while size < self._max_samples:
            remaining = deadline - time.monotonic()
            try:
                item = (
                    self._queue.get_nowait()
                    if remaining <= 0
                    else await asyncio.wait_for(self._queue.get(), remaining)
                )
            except (asyncio.QueueEmpty, TimeoutError):
                break
            if size + len(item.samples) > self._max_samples:
                self._carry = item  # opens the next batch
                break
            batch.append(item)
            size += len(item.samples)
        return batch

    async def _score(self, samples: Sequence[RewardSample]) -> tuple[list[float], dict[str, float]]:
        result = await asyncio.to_thread(self._score_fn, samples)
        scores = [float(v) for v in result.scores.detach().cpu().tolist()]
        if len(scores) != len(samples):
            raise RuntimeError(f"source returned {len(scores)} scores for {len(samples)}")
        self.stats.batches += 1
        self.stats.largest_batch = max(self.stats.largest_batch, len(samples))
        return scores, {k: float(v) for k, v in result.metrics.items()}

    async def _alone(self, pending: _Pending) -> None:
        """Scores one request by itself; its future gets the result or the error."""
        if pending.future.done():  # gone meanwhile
            self.stats.abandoned += 1
            return
        try:
            result = await self._score(pending.samples)
        except Exception as error:  # noqa: BLE001 - the request gets its own error
            self.stats.errors += 1
            log.warning(
                "reward_service.score_failed", error=str(error), samples=len(pending.samples)
            )
            if not pending.future.done():
                pending.future.set_exception(error)
            return
        self.stats.requests += 1
        self.stats.samples += len(pending.samples)
        if not pending.future.done():
            pending.future.set_result(result)

    async def _run(self) -> None:
        slots = asyncio.Semaphore(self._max_concurrent)
        while True:
            await slots.acquire()
            try:
                gathered = await self._gather()
            except BaseException:
                slots.release()
                raise
            task = asyncio.get_running_loop().create_task(self._handle(gathered))
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)
            task.add_done_callback(lambda _: slots.release())

    async def _handle(self, gathered: list[_Pending]) -> None:
        """Scores one gathered batch (merged; request by request when the merge fails)."""
        batch = [pending for pending in gathered if not pending.future.done()]
        self.stats.abandoned += len(gathered) - len(batch)
        if len(batch) == 1:
            await self._alone(batch[0])
        if len(batch) <= 1:
            return
        samples = [s for pending in batch for s in pending.samples]
        try:
            scores, metrics = await self._score(samples)
        except Exception:  # noqa: BLE001 - find the request(s) that fail on their own
            self.stats.isolated += 1
            for pending in batch:
                await self._alone(pending)
            return
        self.stats.requests += len(batch)
        self.stats.samples += len(samples)
        start = 0
        for pending in batch:
            end = start + len(pending.samples)
            if not pending.future.done():
                pending.future.set_result((scores[start:end], metrics))
            start = end
