"""Run-directory lock, the fresh / resume / auto / overwrite decision, and log trimming."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from lightrft.adapters.checkpoint import LocalCheckpointStore
from lightrft.entrypoints.run_dir.directory import (
    OWNER_FILE,
    RunDirectoryError,
    RunDirectoryLock,
    RunDirectoryLocked,
    decide_start,
    inspect_run_directory,
    trim_logs_after,
)


def test_a_second_holder_is_refused_with_the_first_ones_pid_and_host(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with RunDirectoryLock(run):
        owner = json.loads((run / OWNER_FILE).read_text())
        assert owner["pid"] == os.getpid() and owner["host"] == socket.gethostname()
        with pytest.raises(RunDirectoryLocked) as info:
            RunDirectoryLock(run).acquire()
        message = str(info.value)
        assert str(run) in message and f"pid {os.getpid()}" in message
        assert f"host {socket.gethostname()}" in message
    assert not (run / OWNER_FILE).exists()
    with RunDirectoryLock(run):  # released: free again
        pass


def test_a_lock_left_by_a_killed_process_never_blocks(tmp_path: Path) -> None:
    run = tmp_path / "run"
    holder = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {os.getcwd()!r})
        from lightrft.entrypoints.run_dir.directory import RunDirectoryLock
        lock = RunDirectoryLock(__import__("pathlib").Path({str(run)!r}))
        lock.acquire()
        print("locked", flush=True)
        time.sleep(600)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with pytest.raises(RunDirectoryLocked, match=f"pid {proc.pid}"):
            RunDirectoryLock(run).acquire()
    finally:
        proc.kill()
        proc.wait()
    assert (run / OWNER_FILE).exists()  # the killed holder's record stays behind...
    lock = RunDirectoryLock(run)
    lock.acquire()  # ...and does not matter: the kernel dropped its lock
    assert json.loads((run / OWNER_FILE).read_text())["pid"] == os.getpid()
    lock.release()


def _previous_run(run: Path, checkpoint_steps: tuple[int, ...] = (2,)) -> None:
    run.mkdir(parents=True, exist_ok=True)
    rows = [{"step": s, "reward/mean": s / 10} for s in range(1, 5)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = LocalCheckpointStore(run / "checkpoints")
    for step in checkpoint_steps:
        store.save(step, {"w": torch.zeros(2)})


def test_fresh_start_into_a_previous_run_offers_resume_and_overwrite(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert decide_start(run, resume=False, overwrite=False) == "fresh"  # does not exist yet
    _previous_run(run)
    with pytest.raises(RunDirectoryError) as info:
        decide_start(run, resume=False, overwrite=False)
    message = str(info.value)
    assert "holds a previous run" in message and "checkpoints up to step 2" in message
    assert "--resume" in message and "--overwrite" in message
    assert (run / "metrics.jsonl").exists()  # nothing touched


def test_overwrite_moves_the_previous_run_aside(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _previous_run(run)
    with RunDirectoryLock(run):
        assert decide_start(run, resume=False, overwrite=True) == "fresh"
        assert sorted(p.name for p in run.iterdir()) == [".lightrft-owner.json", ".lightrft.lock"]
    (aside,) = [p for p in tmp_path.iterdir() if p.name.startswith("run.old-")]
    assert sorted(p.name for p in aside.iterdir()) == ["checkpoints", "metrics.jsonl"]
    assert LocalCheckpointStore(aside / "checkpoints").steps() == [2]
    with pytest.raises(RunDirectoryError, match="contradict"):
        decide_start(run, resume=True, overwrite=True)


def test_resume_needs_a_checkpoint_unless_auto(tmp_path: Path) -> None:
    empty = tmp_path / "typo"
    with pytest.raises(RunDirectoryError, match="nothing to resume in .*typo.*--resume=auto"):
        decide_start(empty, resume=True, overwrite=False)
    assert decide_start(empty, resume="auto", overwrite=False) == "fresh"
    run = tmp_path / "run"
    _previous_run(run, checkpoint_steps=())
    # metrics but no checkpoint: neither resumable nor empty
    with pytest.raises(RunDirectoryError, match="holds metrics.jsonl"):
        decide_start(run, resume=True, overwrite=False)
    # auto: nothing to resume, so a fresh start; the leftovers are moved aside, not mixed in
    assert decide_start(run, resume="auto", overwrite=False) == "fresh"
    assert not (run / "metrics.jsonl").exists()
    (aside,) = tmp_path.glob("run.old-*")
    assert (aside / "metrics.jsonl").is_file()
    _previous_run(run, checkpoint_steps=(2,))
    assert decide_start(run, resume=True, overwrite=False) == "resume"
    assert decide_start(run, resume="auto", overwrite=False) == "resume"


def test_per_rank_checkpoints_count_when_every_rank_has_the_step(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for rank, steps in ((0, (2, 4)), (1, (2,))):  # rank 1 died before committing step 4
        store = LocalCheckpointStore(run / "checkpoints" / f"rank_{rank:05d}", keep_last=None)
        for step in steps:
            store.save(step, {"w": torch.zeros(1)})
    assert inspect_run_directory(run).checkpoint_steps == (2,)


def test_trimming_drops_rows_after_the_checkpoint_and_a_torn_line(tmp_path: Path) -> None:
    rows = [{"step": 0, "eval/accuracy": 0.1}] + [{"step": s, "loss": s} for s in (1, 2, 3, 4)]
    text = "".join(json.dumps(r) + "\n" for r in rows) + '{"step": 5, "lo'  # killed mid-write
    (tmp_path / "metrics.jsonl").write_text(text)
    (tmp_path / "samples.jsonl").write_text(
        '{"step": 2, "prompt": "a"}\n{"step": 3, "prompt": "b"}\n'
    )
    dropped = trim_logs_after(tmp_path, step=2)
    assert dropped == {"metrics.jsonl": 3, "samples.jsonl": 1}  # steps 3, 4 and the torn 5
    kept = [
        json.loads(line)["step"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()
    ]
    assert kept == [0, 1, 2]
    assert (tmp_path / "samples.jsonl").read_text() == '{"step": 2, "prompt": "a"}\n'


def test_advice_offers_resume_only_when_there_is_a_checkpoint(tmp_path: Path) -> None:
    """EC RD02: a run without a checkpoint was offered --resume, and --resume was answered
    with 'start without --resume', the refusal the user came from."""
    run = tmp_path / "run"
    _previous_run(run, checkpoint_steps=())
    with pytest.raises(RunDirectoryError) as fresh:
        decide_start(run, resume=False, overwrite=False)
    assert "no checkpoint" in str(fresh.value) and "--resume" not in str(fresh.value)
    assert "--overwrite" in str(fresh.value)
    with pytest.raises(RunDirectoryError) as resumed:
        decide_start(run, resume=True, overwrite=False)
    assert "nothing to resume" in str(resumed.value) and "--overwrite" in str(resumed.value)
    assert "without --resume" not in str(resumed.value)
