"""Contract of the ``Tracker`` port. Append real trackers to ``IMPLEMENTATIONS``.

A factory returns a :class:`TrackerSubject`: the tracker and, when the sink can be read
back (a JSONL file, memory), a function returning the logged ``(step, metrics)`` pairs,
called after ``close``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from lightrft.adapters.fakes import InMemoryTracker
from lightrft.domain.ports import Tracker


@dataclass
class TrackerSubject:
    tracker: Tracker
    read_metrics: Callable[[], list[tuple[int, dict[str, float]]]] | None


def make_fake_tracker() -> TrackerSubject:
    tracker = InMemoryTracker()
    return TrackerSubject(tracker, lambda: tracker.metrics)


IMPLEMENTATIONS: list[object] = [pytest.param(make_fake_tracker, id="fake")]


@pytest.fixture(params=IMPLEMENTATIONS)
def subject(request: pytest.FixtureRequest) -> TrackerSubject:
    factory: Callable[[], TrackerSubject] = request.param
    return factory()


def test_logs_metrics_and_samples_then_closes(subject: TrackerSubject) -> None:
    tracker = subject.tracker
    assert isinstance(tracker, Tracker)
    tracker.log_metrics({"reward/mean": 0.25, "loss": 1.5}, step=1)
    tracker.log_metrics({"reward/mean": 0.5}, step=2)
    tracker.log_samples([{"prompt": "3 4 =", "response": "5", "reward": 1.0}], step=2)
    tracker.close()
    if subject.read_metrics is None:
        pytest.skip("this sink cannot be read back")
    assert subject.read_metrics() == [
        (1, {"reward/mean": 0.25, "loss": 1.5}),
        (2, {"reward/mean": 0.5}),
    ]
