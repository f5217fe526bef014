"""Scoring several reward sources: sources that allow it run at once on a bounded pool (wall
time under the sum, results in the sources' order), colocated models one at a time on the
caller's thread, and a source past its deadline ends in the typed error naming it."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest
import torch

from lightrft.application.reward_failures import RewardSourceFailingError
from lightrft.application.reward_scoring import score_completions
from lightrft.application.source_scoring import SourceConcurrency, score_sources
from lightrft.domain.async_errors import DeadlineExceededError
from lightrft.domain.ports import RewardSource, RewardSourceUnavailableError
from lightrft.domain.types import Completion, PromptRecord, RewardResult, RewardSample

PROMPTS = [PromptRecord("p", "q", (1,))]
COMPLETIONS = [Completion(0, (2,), t, "stop") for t in ("a", "b")]
SAMPLES = [RewardSample(PROMPTS[0], c) for c in COMPLETIONS]


class Running:
    """How many sources are scoring right now, and the most at once."""

    def __init__(self) -> None:
        self.now = self.most = 0
        self.lock = threading.Lock()

    def enter(self) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def leave(self) -> None:
        with self.lock:
            self.now -= 1


class SleepySource:
    """Sleeps ``seconds``, then scores every sample ``value``; records its thread."""

    def __init__(
        self,
        name: str,
        seconds: float,
        value: float,
        *,
        concurrent: bool = True,
        running: Running | None = None,
        error: Exception | None = None,
    ) -> None:
        self.name, self.seconds, self.value = name, seconds, value
        self.runs_concurrently = concurrent
        self.running = running or Running()
        self.error = error
        self.threads: list[str] = []
        self.spans: list[tuple[float, float]] = []

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        self.threads.append(threading.current_thread().name)
        self.running.enter()
        start = time.monotonic()
        time.sleep(self.seconds)
        self.spans.append((start, time.monotonic()))
        self.running.leave()
        if self.error is not None:
            raise self.error
        return RewardResult(torch.full((len(samples),), self.value))

    def onload(self) -> None: ...

    def offload(self) -> None: ...

    def close(self) -> None: ...


def _values(scored: list[tuple[RewardResult, float]]) -> list[float]:
    return [float(result.scores[0]) for result, _ in scored]


def test_concurrent_sources_take_less_than_the_sum_and_keep_their_order() -> None:
    # the first finishes last: 0.6 s, 0.4 s, 0.2 s
    sources = [SleepySource(f"s{i}", 0.6 - 0.2 * i, float(i)) for i in range(3)]
    start = time.monotonic()
    scored = score_sources(sources, SAMPLES, SourceConcurrency(max_workers=3))
    wall = time.monotonic() - start
    assert _values(scored) == [0.0, 1.0, 2.0]
    assert wall < 0.8 * 1.2, wall  # the sum is 1.2 s; at once it is the longest, 0.6 s
    assert all(seconds >= s.seconds for (_, seconds), s in zip(scored, sources, strict=True))
    assert all(s.threads[0] != threading.current_thread().name for s in sources)


def test_colocated_models_run_one_at_a_time_on_the_callers_thread() -> None:
    models = [SleepySource(f"rm{i}", 0.2, float(i), concurrent=False) for i in range(2)]
    rules = [SleepySource(f"rule{i}", 0.3, 10.0 + i) for i in range(2)]
    sources = [models[0], rules[0], models[1], rules[1]]
    scored = score_sources(sources, SAMPLES)
    assert _values(scored) == [0.0, 10.0, 1.0, 11.0]
    main = threading.current_thread().name
    assert models[0].threads == [main] and models[1].threads == [main]
    a_end, b_start = models[0].spans[0][1], models[1].spans[0][0]
    assert a_end <= b_start  # never both on the device


def test_the_pool_is_bounded_by_max_workers() -> None:
    running = Running()
    sources = [SleepySource(f"s{i}", 0.15, float(i), running=running) for i in range(5)]
    scored = score_sources(sources, SAMPLES, SourceConcurrency(max_workers=2))
    assert _values(scored) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert running.most == 2


def test_one_worker_scores_one_after_another_on_the_callers_thread() -> None:
    sources = [SleepySource(f"s{i}", 0.0, float(i)) for i in range(3)]
    score_sources(sources, SAMPLES, SourceConcurrency(max_workers=1))
    assert {t for s in sources for t in s.threads} == {threading.current_thread().name}


def test_a_source_past_its_deadline_ends_in_the_typed_error_naming_it() -> None:
    sources = [SleepySource("quick", 0.0, 1.0), SleepySource("slow", 30.0, 2.0)]
    start = time.monotonic()
    with pytest.raises(DeadlineExceededError, match="reward source 'slow'") as caught:
        score_sources(sources, SAMPLES, SourceConcurrency(max_workers=2, deadline_s=0.3))
    assert time.monotonic() - start < 10.0  # abandoned, not waited for
    assert caught.value.seconds == 0.3


def test_an_unavailable_source_on_a_thread_is_a_failing_source_named() -> None:
    down = SleepySource("remote", 0.0, 0.0, error=RewardSourceUnavailableError("503"))
    with pytest.raises(RewardSourceFailingError, match="reward source 'remote' cannot score: 503"):
        score_sources([SleepySource("rule", 0.0, 1.0), down], SAMPLES)


def test_score_completions_keeps_each_sources_scores_under_its_name() -> None:
    sources: list[RewardSource] = [
        SleepySource("slow", 0.3, 1.0),
        SleepySource("model", 0.0, 2.0, concurrent=False),
        SleepySource("fast", 0.0, 3.0),
    ]
    scores = score_completions(sources, PROMPTS, COMPLETIONS, {"slow": 1.0, "fast": 2.0})
    assert list(scores.by_source) == ["slow", "model", "fast"]
    torch.testing.assert_close(scores.total, torch.tensor([9.0, 9.0]))  # 1 + 2 + 2 * 3
    assert scores.metrics["time/reward/slow_s"] >= 0.3
