"""RD16: a full disk while a run logs names the file, and advises --resume only when the run
has a checkpoint to resume from."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from lightrft.adapters.tracking.jsonl_tracker import JsonlTracker
from lightrft.entrypoints.next_command import NextCommand
from lightrft.entrypoints.run_dir.log_write import (
    RunWriteError,
    is_full_disk,
    run_write_failure,
)
from lightrft.entrypoints.user_errors import describe, is_input_error, is_user_error

ARGV = ("train", "grpo", "--run-dir", "/r", "checkpoint.every=null")


def _full_metrics(tmp_path: Path) -> tuple[JsonlTracker, OSError]:
    """A tracker whose metrics.jsonl is /dev/full (every write: ENOSPC)."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    tracker = JsonlTracker(tmp_path)
    tracker.metrics_path.symlink_to("/dev/full")
    with pytest.raises(OSError) as caught:
        tracker.log_metrics({"loss": 1.0}, step=3)
    tracker.close()  # does not raise the same error again
    return tracker, caught.value


def test_a_full_disk_while_logging_names_the_file(tmp_path: Path) -> None:
    tracker, error = _full_metrics(tmp_path)
    assert error.errno == errno.ENOSPC and is_full_disk(error)
    assert error.filename == str(tracker.metrics_path)


def test_a_run_without_checkpoints_is_not_told_to_resume(tmp_path: Path) -> None:
    tracker, error = _full_metrics(tmp_path)
    failure = run_write_failure(error, [], tmp_path / "checkpoints", NextCommand(ARGV))
    text = describe(failure)
    assert text.startswith(f"cannot write {tracker.metrics_path} (No space left on device)")
    assert "This run has no checkpoint, so there is nothing to resume from" in text
    assert "--resume" not in text and "checkpoints verify" not in text
    assert "--overwrite" in text and "checkpoint.every=N" in text
    assert isinstance(failure, RunWriteError) and failure.errno == errno.ENOSPC
    assert is_user_error(failure) and not is_input_error(failure)  # exit 1, one line
    assert "\n" not in text


def test_a_run_with_checkpoints_is_told_its_newest_and_the_resume_command(
    tmp_path: Path,
) -> None:
    _, error = _full_metrics(tmp_path)
    text = describe(run_write_failure(error, [2, 4], tmp_path / "ck", NextCommand(ARGV)))
    assert f"The newest checkpoint is step 4 in {tmp_path / 'ck'}" in text
    assert text.endswith("--resume (it trains the steps after 4 again)")
    assert "nothing to resume" not in text
