"""Contract of the ``Tracker`` port. Append real trackers to ``IMPLEMENTATIONS``.

A factory takes an empty directory it may write to and returns a :class:`TrackerSubject`:
the tracker and, when the sink can be read back (a JSONL file, memory), a function returning
the logged ``(step, metrics)`` pairs, called after ``close``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from lightrft.adapters.fakes import InMemoryTracker
from lightrft.adapters.tracking import JsonlTracker
from lightrft.domain.ports import Tracker


@dataclass
class TrackerSubject:
    tracker: Tracker
    read_metrics: Callable[[], list[tuple[int, dict[str, float]]]] | None


def make_fake_tracker(_directory: Path) -> TrackerSubject:
    tracker = InMemoryTracker()
    return TrackerSubject(tracker, lambda: tracker.metrics)


def make_jsonl_tracker(directory: Path) -> TrackerSubject:
    tracker = JsonlTracker(directory / "run")

    def read_metrics() -> list[tuple[int, dict[str, float]]]:
        lines = tracker.metrics_path.read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines]
        stamps = [record.pop("time") for record in records]
        assert all(isinstance(stamp, float) for stamp in stamps)  # wall-clock seconds
        return [(record.pop("step"), record) for record in records]

    return TrackerSubject(tracker, read_metrics)


IMPLEMENTATIONS: list[object] = [
    pytest.param(make_fake_tracker, id="fake"),
    pytest.param(make_jsonl_tracker, id="jsonl"),
]


@pytest.fixture(params=IMPLEMENTATIONS)
def subject(request: pytest.FixtureRequest, tmp_path: Path) -> TrackerSubject:
    factory: Callable[[Path], TrackerSubject] = request.param
    return factory(tmp_path)


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
