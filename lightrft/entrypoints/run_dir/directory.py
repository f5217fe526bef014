"""Run-directory ownership and the start-fresh / resume / overwrite decision.

One run owns its directory: :class:`RunDirectoryLock` holds an OS lock (``flock`` through
``filelock``) on ``RUN_DIR/.lightrft.lock`` for the whole run, and records the holder's pid
and host in ``RUN_DIR/.lightrft-owner.json`` for the error a second process gets. The kernel
drops the lock when its process dies, so a lock left by a killed run never blocks.

:func:`decide_start` never mixes two runs in one directory (every verb that writes a run
goes through it, see :mod:`guard`):

- without ``resume``, a directory that is not empty (anything but the lock files and the
  ``config.yaml`` / ``history.jsonl`` of a start that trained nothing) is an error that
  offers ``--resume`` and ``--overwrite``; ``overwrite`` moves the previous run's files
  aside to ``RUN_DIR.old-<UTC time>`` (nothing is deleted) and starts fresh;
- ``resume=True`` with no checkpoint is an error (a mistyped path must not look like a
  resume); ``resume="auto"`` resumes when there is a checkpoint and otherwise starts fresh,
  moving whatever a run without a checkpoint left (say, one killed before its first
  checkpoint) aside like ``overwrite`` does.

On resume, :func:`trim_logs_after` drops the JSONL rows logged after the checkpoint, so no
step's metrics appear twice.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import structlog
from filelock import FileLock, Timeout

from lightrft.adapters.checkpoint import LocalCheckpointStore

log = structlog.get_logger(__name__)

LOCK_FILE = ".lightrft.lock"
OWNER_FILE = ".lightrft-owner.json"
FIRST_CONFIG = "config.yaml"
HISTORY_FILE = "history.jsonl"
NOT_A_RUN = (LOCK_FILE, OWNER_FILE, FIRST_CONFIG, HISTORY_FILE)
"""Entries that alone are no previous run: the lock, and the records a start writes before
it trains anything (a start that failed early leaves them; the next fresh start replaces
them). Every other entry is."""
LOG_FILES = ("metrics.jsonl", "samples.jsonl")

ResumeChoice = bool | Literal["auto"]
Start = Literal["fresh", "resume"]


class RunDirectoryError(RuntimeError):
    """The run directory cannot be used as asked; the message says what to do instead."""


class RunDirectoryLocked(RunDirectoryError):
    """Another live process holds the run directory."""


class RunDirectoryLock:
    """The exclusive lock of one run directory (a context manager)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self._lock = FileLock(str(self.run_dir / LOCK_FILE), timeout=0)

    @property
    def owner_path(self) -> Path:
        return self.run_dir / OWNER_FILE

    def acquire(self) -> None:
        """Takes the lock now or raises :class:`RunDirectoryLocked` naming the holder."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire()
        except Timeout:
            raise RunDirectoryLocked(
                f"run directory {self.run_dir} is in use by another lightrft process "
                f"({self._describe_owner()}); wait for it to end, stop it, or choose another "
                "logging.run_dir / --run-dir"
            ) from None
        owner = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        self.owner_path.write_text(json.dumps(owner) + "\n", encoding="utf-8")

    def release(self) -> None:
        """Drops the lock (and the owner record) if held."""
        if self._lock.is_locked:
            self.owner_path.unlink(missing_ok=True)
            self._lock.release()

    def _describe_owner(self) -> str:
        try:
            owner = json.loads(self.owner_path.read_text(encoding="utf-8"))
            return f"pid {owner['pid']} on host {owner['host']}, since {owner['started_utc']}"
        except (OSError, ValueError, KeyError, TypeError):
            return "holder unknown"

    def __enter__(self) -> RunDirectoryLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@dataclass(frozen=True)
class PreviousRun:
    """What a run directory already holds."""

    entries: tuple[str, ...]
    checkpoint_steps: tuple[int, ...]

    @property
    def exists(self) -> bool:
        return bool(self.entries)

    def describe(self) -> str:
        steps = self.checkpoint_steps
        ckpt = f"checkpoints up to step {max(steps)}" if steps else "no checkpoint"
        return f"{', '.join(self.entries)}; {ckpt}"


def inspect_run_directory(run_dir: Path) -> PreviousRun:
    """The entries of ``run_dir`` that make it hold a previous run (sorted; empty
    directories do not count) and its checkpoints' steps (for several ranks, the steps every
    rank holds)."""
    run_dir = Path(run_dir)
    names = sorted(p.name for p in run_dir.iterdir()) if run_dir.is_dir() else []
    entries = tuple(n for n in names if n not in NOT_A_RUN and _non_empty(run_dir / n))
    return PreviousRun(entries, tuple(checkpoint_steps(run_dir / "checkpoints")))


def checkpoint_steps(root: Path) -> list[int]:
    """Steps of the checkpoints under ``root``, damaged ones included (per-rank ``rank_*``
    stores: the steps all of them hold)."""
    ranks = sorted(root.glob("rank_*")) if root.is_dir() else []
    if not ranks:
        return LocalCheckpointStore(root, keep_last=None).steps()
    common = set(LocalCheckpointStore(ranks[0], keep_last=None).steps())
    for rank in ranks[1:]:
        common &= set(LocalCheckpointStore(rank, keep_last=None).steps())
    return sorted(common)


def _non_empty(path: Path) -> bool:
    if path.is_dir():
        return any(path.iterdir())
    return path.exists()


def decide_start(run_dir: Path, resume: ResumeChoice, overwrite: bool) -> Start:
    """Whether the run starts fresh or resumes (moving a previous run aside on
    ``overwrite``); raises :class:`RunDirectoryError` with what to do instead."""
    run_dir = Path(run_dir)
    if overwrite and resume is True:
        raise RunDirectoryError(
            "--resume and --overwrite contradict each other: --resume continues the run in "
            f"{run_dir}, --overwrite moves it aside and starts a new one; pick one"
        )
    previous = inspect_run_directory(run_dir)
    if previous.checkpoint_steps and resume:
        return "resume"
    if overwrite or resume == "auto":
        if previous.exists:
            moved = move_aside(run_dir)
            log.warning("run_dir.moved_aside", run_dir=str(run_dir), to=str(moved))
        return "fresh"
    aside = f"--overwrite to move it aside to {run_dir.name}.old-<time> and start anew"
    if resume is True and previous.exists:  # a run without a checkpoint: only a new start
        raise RunDirectoryError(
            f"nothing to resume in {run_dir}: it holds no checkpoint (it holds "
            f"{', '.join(previous.entries)}); pass {aside}, or choose another run directory"
        )
    if resume is True:
        raise RunDirectoryError(
            f"nothing to resume in {run_dir}: it holds no checkpoint; check the path, start "
            "without --resume, or pass --resume=auto to start fresh whenever there is "
            "nothing to resume"
        )
    if previous.exists:
        cont = "--resume to continue it, " if previous.checkpoint_steps else ""
        raise RunDirectoryError(
            f"run directory {run_dir} holds a previous run ({previous.describe()}); pass "
            f"{cont}{aside}, or choose another run directory"
        )
    return "fresh"


def move_aside(run_dir: Path) -> Path:
    """Moves every entry of ``run_dir`` but the lock files to ``RUN_DIR.old-<UTC time>``."""
    target = set_aside_path(run_dir)
    target.mkdir(parents=True)
    for entry in run_dir.iterdir():
        if entry.name not in (LOCK_FILE, OWNER_FILE):
            os.rename(entry, target / entry.name)
    return target


def set_aside_path(path: Path) -> Path:
    """A free ``PATH.old-<UTC time>[-N]`` sibling of ``path`` (where its contents go)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.old-{stamp}")
    suffix = 1
    while target.exists():
        suffix += 1
        target = path.with_name(f"{path.name}.old-{stamp}-{suffix}")
    return target


def trim_logs_after(run_dir: Path, step: int) -> dict[str, int]:
    """Drops rows with ``"step" > step`` (and a torn last line) from the JSONL logs.

    A resumed run repeats the steps after its checkpoint; without this their rows would
    appear twice. Each file is rewritten through a temporary file and an atomic rename.
    Returns the rows dropped per file.
    """
    dropped: dict[str, int] = {}
    for name in LOG_FILES:
        path = Path(run_dir) / name
        if not path.is_file():
            continue
        kept, removed = [], 0
        for line in path.read_text(encoding="utf-8").splitlines():
            row = _row(line)
            if row is None or int(row.get("step", 0)) > step:
                removed += 1
            else:
                kept.append(line + "\n")
        if removed:
            tmp = path.with_name(f".{name}.trim")
            tmp.write_text("".join(kept), encoding="utf-8")
            os.replace(tmp, path)
        dropped[name] = removed
    return dropped


def _row(line: str) -> dict[str, Any] | None:
    try:
        row = json.loads(line)
    except ValueError:
        return None
    return row if isinstance(row, dict) else None
