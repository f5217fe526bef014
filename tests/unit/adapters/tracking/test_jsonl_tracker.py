"""JsonlTracker: exact file content, flushing, append-on-resume, strict JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from lightrft.adapters.tracking import JsonlTracker
from lightrft.domain.ports import Tracker


def _clock(*times: float) -> Iterator[float]:
    return iter(times)


def test_metrics_lines_are_exact_and_flushed_before_close(tmp_path: Path) -> None:
    times = _clock(100.0, 101.5)
    tracker = JsonlTracker(tmp_path / "run", clock=lambda: next(times))
    assert isinstance(tracker, Tracker)
    tracker.log_metrics({"reward/mean": 0.5, "kl/mean": torch.tensor(0.25)}, step=1)
    tracker.log_metrics({"loss": float("nan"), "up": float("inf"), "down": -float("inf")}, 2)
    # read through another handle while the tracker is still open: the data left the
    # Python buffer, so a crash now would lose nothing
    text = (tmp_path / "run" / "metrics.jsonl").read_text(encoding="utf-8")
    assert text == (
        '{"step": 1, "time": 100.0, "reward/mean": 0.5, "kl/mean": 0.25}\n'
        '{"step": 2, "time": 101.5, "loss": "nan", "up": "inf", "down": "-inf"}\n'
    )
    tracker.close()


def test_samples_one_line_per_row_with_step(tmp_path: Path) -> None:
    tracker = JsonlTracker(tmp_path, clock=lambda: 0.0)
    rows = [
        {"prompt": "2+2=?", "response": "<b>4</b>\nyes", "reward": 1.0, "group": 0},
        {"prompt": "né", "response": "", "reward": torch.tensor(float("nan")), "group": 1},
        {"prompt": "x", "ids": torch.tensor([1, 2]), "adv": np.float32(0.5), "ok": True},
    ]
    tracker.log_samples(rows, step=3)
    tracker.log_samples([], step=4)  # nothing to write
    lines = (tmp_path / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines == [
        '{"step": 3, "prompt": "2+2=?", "response": "<b>4</b>\\nyes", "reward": 1.0, "group": 0}',
        '{"step": 3, "prompt": "n\\u00e9", "response": "", "reward": "nan", "group": 1}',
        '{"step": 3, "prompt": "x", "ids": [1, 2], "adv": 0.5, "ok": true}',
    ]
    assert json.loads(lines[0])["response"] == "<b>4</b>\nyes"
    tracker.close()


def test_a_resumed_run_appends(tmp_path: Path) -> None:
    first = JsonlTracker(tmp_path, clock=lambda: 1.0)
    first.log_metrics({"a": 1.0}, 1)
    first.close()
    second = JsonlTracker(tmp_path, clock=lambda: 2.0)
    second.log_metrics({"a": 2.0}, 2)
    second.close()
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"step": 1, "time": 1.0, "a": 1.0},
        {"step": 2, "time": 2.0, "a": 2.0},
    ]


def test_reserved_keys_and_use_after_close_are_refused(tmp_path: Path) -> None:
    tracker = JsonlTracker(tmp_path)
    with pytest.raises(ValueError, match="reserved"):
        tracker.log_metrics({"step": 1.0}, 1)
    with pytest.raises(ValueError, match="reserved"):
        tracker.log_samples([{"step": 3}], 1)
    assert not (tmp_path / "metrics.jsonl").exists()
    tracker.close()
    tracker.close()  # idempotent
    with pytest.raises(RuntimeError, match="after close"):
        tracker.log_metrics({"a": 1.0}, 1)
