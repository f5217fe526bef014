"""Asking several reward sources for scores: concurrently where a source allows it.

A source that says ``runs_concurrently`` (rule verifiers, remote services: no model on this
process's device) is scored on a bounded pool of daemon threads, each call with a deadline;
the others (colocated reward models) run one at a time on the caller's thread, meanwhile,
since they share the device. Results come back in the sources' order, whatever order they
finish in. A call past its deadline ends the scoring with
:class:`~lightrft.domain.async_errors.DeadlineExceededError` naming the source; the call is
abandoned (its daemon thread cannot be killed; what it returns later is dropped).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from lightrft.application.deadline_calls import CallPool, CallResult
from lightrft.application.reward_failures import (
    FAILURES_METRIC,
    RewardSourceFailingError,
    failure_rate_key,
)
from lightrft.application.source_concurrency import SourceConcurrency as SourceConcurrency
from lightrft.domain.async_errors import DeadlineExceededError
from lightrft.domain.ports import RewardSource, RewardSourceUnavailableError
from lightrft.domain.types import RewardResult, RewardSample

Scored = tuple[RewardResult, float]  # a source's result and the seconds it took


def runs_concurrently(source: RewardSource) -> bool:
    """Whether ``source`` may be scored beside others on a thread; a source that does not
    say (written before ``RewardSource.runs_concurrently``) runs on the caller's thread."""
    return bool(getattr(source, "runs_concurrently", False))


def _timed(source: RewardSource, samples: Sequence[RewardSample]) -> Scored:
    """The source's result and seconds; a source that cannot score at all
    (:class:`RewardSourceUnavailableError`) is a failing source."""
    started = time.perf_counter()
    try:
        result = source.score(samples)
    except RewardSourceUnavailableError as error:  # the failing-source policy applies
        raise RewardSourceFailingError(
            f"reward source {source.name!r} cannot score: {error}. Training stopped; "
            "fix the source, then resume with --resume"
        ) from error
    return result, time.perf_counter() - started


def score_sources(
    sources: Sequence[RewardSource],
    samples: Sequence[RewardSample],
    concurrency: SourceConcurrency | None = None,
) -> list[Scored]:
    """Each source's result on ``samples`` and its seconds, in the order of ``sources``.

    An exception a source raises reaches the caller (the first one seen; a source that
    cannot score at all as :class:`RewardSourceFailingError`); a pooled source past
    ``concurrency.deadline_s`` raises DeadlineExceededError naming it.
    """
    return score_each([(source, samples) for source in sources], concurrency)


def score_each(
    jobs: Sequence[tuple[RewardSource, Sequence[RewardSample]]],
    concurrency: SourceConcurrency | None = None,
) -> list[Scored]:
    """:func:`score_sources` where each source scores its own samples (``jobs``: a source
    and its samples each, e.g. the rows of the recipes that use it); results in job order."""
    concurrency = concurrency or SourceConcurrency()
    pooled = [i for i, (s, _) in enumerate(jobs) if runs_concurrently(s)]
    if concurrency.max_workers == 1 or len(jobs) < 2 or not pooled:
        return [_timed(source, samples) for source, samples in jobs]
    results: dict[int, Scored] = {}
    pool: CallPool[int] = CallPool("reward-source")
    waiting = list(pooled)

    def start_more() -> None:
        while waiting and pool.pending < concurrency.max_workers:
            i = waiting.pop(0)
            deadline = time.monotonic() + concurrency.deadline_s
            pool.start(i, deadline, _bind(*jobs[i]))

    start_more()
    for i, (source, samples) in enumerate(jobs):  # colocated models: here, one at a time
        if i not in pooled:
            results[i] = _timed(source, samples)
    while pool.pending or waiting:
        finished, expired = pool.collect(linger_s=0.0)
        if expired:
            source, samples = jobs[min(expired)]
            raise DeadlineExceededError(
                f"reward source {source.name!r} scoring {len(samples)} samples",
                concurrency.deadline_s,
            )
        _keep(finished, results)
        start_more()
    return [results[i] for i in range(len(jobs))]


def _bind(source: RewardSource, samples: Sequence[RewardSample]) -> Callable[[], Scored]:
    return lambda: _timed(source, samples)


def _keep(finished: list[CallResult[int]], results: dict[int, Scored]) -> None:
    for call in sorted(finished, key=lambda c: c.key):
        if call.error is not None:
            raise call.error
        results[call.key] = call.value


def source_scores(
    name: str, result: RewardResult, seconds: float, samples: int
) -> tuple[Tensor, dict[str, float]]:
    """A source's scores as float32 on the CPU, checked to be one per sample (``samples``),
    and its metrics: ``time/reward/<name>_s``, ``reward/<name>/mean``, its own ones, and the
    failed fraction of the samples when it reports failures."""
    metrics = {f"time/reward/{name}_s": seconds}
    scores = result.scores.detach().to(torch.float32).cpu()
    if tuple(scores.shape) != (samples,):
        raise ValueError(
            f"reward source {name!r} returned scores of shape "
            f"{tuple(scores.shape)} for {samples} samples"
        )
    metrics[f"reward/{name}/mean"] = float(scores.mean())
    for key, value in result.metrics.items():
        metrics[f"reward/{name}/{key}"] = float(value)
    if FAILURES_METRIC in result.metrics and samples:
        metrics[failure_rate_key(name)] = float(result.metrics[FAILURES_METRIC]) / samples
    return scores, metrics
