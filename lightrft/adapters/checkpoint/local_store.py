"""``LocalCheckpointStore``: the ``CheckpointStore`` port on a local (or mounted) filesystem.

Layout under ``root``::

    step_00000010/            a complete checkpoint (only ever created by one rename)
        state.pt              torch.save of the state (weights_only-loadable)
        metadata.json         {"step", "time", "time_utc", "lightrft_version", "has_extra",
                               "files": {path: {"size", "xxh3_128"}}}  (written last)
        extra/                files of ``extra_writer`` (DCP / DeepSpeed shards), if any
    .tmp-step_00000020-1a2b   a save in progress, or the leftover of a crash

A save writes everything into a fresh ``.tmp-*`` directory, fsyncs it, checks that the state
loads back with ``weights_only=True``, then renames it to ``step_XXXXXXXX`` and fsyncs
``root``. Only ``step_*`` directories count, so a crash at any point leaves the previous
checkpoints loadable and ``latest_step`` unchanged. Pruning and overwriting first rename
the victim to a ``.tmp-*`` name, so a half-deleted checkpoint never looks complete.

Since a ``step_*`` directory only ever appears through that rename, every one is a committed
checkpoint: one that lacks ``state.pt`` or ``metadata.json`` (deleted or lost afterwards) is
listed by :meth:`LocalCheckpointStore.steps` like the others and reported as damaged by
``verify`` and ``load``, so resume names it before falling back and ``lightrft checkpoints
verify`` lists it.

``metadata.json`` records the size and xxh3-128 checksum of every other file of the
checkpoint (:mod:`manifest`); :meth:`LocalCheckpointStore.verify` checks them again, and
``load`` raises :class:`DamagedCheckpointError` naming the file when it cannot be read,
including a state that safe loading (``weights_only``) refuses (one line, the file and the
refused object, see :func:`read_state`).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import secrets
import shutil
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError

from lightrft.adapters.checkpoint.directory_swap import io_error
from lightrft.adapters.checkpoint.fs_sync import fsync_dir, fsync_tree
from lightrft.adapters.checkpoint.manifest import HASH_NAME, build_manifest, check_manifest
from lightrft.adapters.checkpoint.safe_state import check_weights_only_safe
from lightrft.domain.checkpoint_health import DamagedCheckpointError

STATE_FILE = "state.pt"
METADATA_FILE = "metadata.json"
EXTRA_DIR = "extra"
TMP_PREFIX = ".tmp-"
_STEP_DIR = re.compile(r"step_(\d{8,})")

ExtraWriter = Callable[[Path], None]


class CheckpointNotFoundError(FileNotFoundError):
    """No checkpoint for the requested step."""


class CheckpointWriteError(OSError):
    """Writing a checkpoint failed (full disk, I/O error); earlier checkpoints are intact.

    ``errno`` is the cause's (``ENOSPC`` for a full disk) when it had one.
    """


class LocalCheckpointStore:
    """Atomic checkpoints of run state in ``root``; the ``keep_last`` newest survive.

    Args:
        root: directory of the run's checkpoints (created if missing).
        keep_last: how many complete checkpoints to keep after a successful save (the one
            just saved always stays); ``None`` keeps all.
        map_location: where ``load`` puts tensors (default: host memory; the training
            strategy moves them to its device).
        verify: after writing, load the file back with ``weights_only=True`` (memory-mapped,
            so tensor data is not read) before committing it.
    """

    def __init__(
        self,
        root: Path,
        keep_last: int | None = 2,
        *,
        map_location: torch.device | None = None,
        verify: bool = True,
    ) -> None:
        if keep_last is not None and keep_last < 1:
            raise ValueError(f"keep_last must be >= 1 or None, got {keep_last}")
        self.root = Path(root)
        self.keep_last = keep_last
        self.map_location = map_location if map_location is not None else torch.device("cpu")
        self.check_on_save = verify

    # -- port -----------------------------------------------------------------------------

    def save(
        self, step: int, state: Mapping[str, Any], extra_writer: ExtraWriter | None = None
    ) -> None:
        """Writes ``state`` (and the files of ``extra_writer``) for ``step`` atomically.

        ``extra_writer(path)`` receives an empty directory inside the checkpoint being
        written; after the commit the same files are under :meth:`extra_directory`. Any
        exception (from validation, ``torch.save``, the writer, the rename) removes the
        temporary directory and propagates; existing checkpoints are untouched.
        """
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        check_weights_only_safe(dict(state))
        self.root.mkdir(parents=True, exist_ok=True)
        self._remove_leftovers()
        tmp = self.root / f"{TMP_PREFIX}{_dir_name(step)}-{secrets.token_hex(4)}"
        tmp.mkdir()
        try:
            self._write(tmp, step, state, extra_writer)
            self._commit(tmp, self.directory(step))
        except OSError as error:
            shutil.rmtree(tmp, ignore_errors=True)
            raise self._write_error(step, error) from error
        except SafetensorError as error:  # a full disk in an extra writer's safetensors
            shutil.rmtree(tmp, ignore_errors=True)
            raise self._write_error(step, io_error(error)) from error
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self._prune(keep=step)

    def _write_error(self, step: int, error: OSError) -> CheckpointWriteError:
        try:
            free = f"{shutil.disk_usage(self.root).free / 2**30:.1f} GiB free there"
        except OSError:
            free = "free space unknown"
        previous = self.latest_step()
        head = (
            f"cannot write the checkpoint of step {step} under {self.root} "
            f"({type(error).__name__}: {error}; {free})."
        )
        if previous is None:  # nothing to resume: --resume alone would be refused
            return CheckpointWriteError(
                error.errno,
                f"{head} There is no earlier checkpoint, so there is nothing to resume: fix "
                "the cause, then run the same command with --resume=auto (it starts over)",
            )
        return CheckpointWriteError(
            error.errno,
            f"{head} Earlier checkpoints are intact (newest: step {previous}): fix the cause, "
            "then run the same command with --resume",
        )

    def latest_step(self) -> int | None:
        """The newest committed checkpoint's step (see :meth:`steps`), or ``None``."""
        steps = self.steps()
        return steps[-1] if steps else None

    def load(self, step: int) -> dict[str, Any]:
        """The state saved for ``step`` (tensors on ``map_location``).

        Raises :class:`DamagedCheckpointError` naming the file when it cannot be read
        (truncated, overwritten, not a torch file).
        """
        path = self._committed_directory(step) / STATE_FILE
        state = read_state(path, self.map_location)
        if not isinstance(state, dict):
            raise DamagedCheckpointError(f"{path} holds a {type(state).__name__}, not a state")
        return state

    def verify(self, step: int) -> list[str]:
        """Problems of the checkpoint of ``step``: files missing, truncated or changed since
        they were saved (each names the file); empty when intact. A checkpoint written
        before checksums were recorded has nothing to check and counts as intact."""
        directory = self._committed_directory(step)
        missing = [
            f"{directory / name}: missing"
            for name in (STATE_FILE, METADATA_FILE)
            if not (directory / name).is_file()
        ]
        if missing:
            return missing
        try:
            meta = self.metadata(step)
        except (OSError, ValueError) as error:
            return [f"{directory / METADATA_FILE}: unreadable ({error})"]
        files = meta.get("files")
        if not isinstance(files, dict):
            return []
        return check_manifest(directory, files)

    # -- extras ---------------------------------------------------------------------------

    def steps(self) -> list[int]:
        """Steps of all committed checkpoints (``step_*`` directories), ascending; one whose
        files went missing since is listed too, and ``verify`` / ``load`` report it."""
        if not self.root.is_dir():
            return []
        found = []
        for entry in self.root.iterdir():
            match = _STEP_DIR.fullmatch(entry.name)
            if match and entry.is_dir():
                found.append(int(match.group(1)))
        return sorted(found)

    def directory(self, step: int) -> Path:
        """Where the checkpoint of ``step`` lives once complete (it may not exist)."""
        return self.root / _dir_name(step)

    def extra_directory(self, step: int) -> Path:
        """The files an ``extra_writer`` wrote when ``step`` was saved (must exist)."""
        path = self._committed_directory(step) / EXTRA_DIR
        if not path.is_dir():
            raise CheckpointNotFoundError(
                f"checkpoint of step {step} in {self.root} was saved without an extra_writer"
            )
        return path

    def metadata(self, step: int) -> dict[str, Any]:
        """The ``metadata.json`` of the checkpoint of ``step``."""
        text = (self._committed_directory(step) / METADATA_FILE).read_text(encoding="utf-8")
        return dict(json.loads(text))

    # -- helpers --------------------------------------------------------------------------

    def _write(
        self, tmp: Path, step: int, state: Mapping[str, Any], extra_writer: ExtraWriter | None
    ) -> None:
        with open(tmp / STATE_FILE, "wb") as f:
            try:
                torch.save(dict(state), f)
            except RuntimeError as error:  # torch reports a failed file write this way
                raise OSError(None, f"torch.save failed: {error}") from error
        if self.check_on_save:
            read_state(tmp / STATE_FILE, torch.device("cpu"), mmap=True)
        if extra_writer is not None:
            (tmp / EXTRA_DIR).mkdir()
            extra_writer(tmp / EXTRA_DIR)
        now = time.time()
        meta = {
            "step": step,
            "time": now,
            "time_utc": datetime.fromtimestamp(now, tz=timezone.utc).isoformat(),
            "lightrft_version": _lightrft_version(),
            "has_extra": extra_writer is not None,
            "hash": HASH_NAME,
            "files": build_manifest(tmp, exclude=(METADATA_FILE,)),
        }
        (tmp / METADATA_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        fsync_tree(tmp)

    def _commit(self, tmp: Path, final: Path) -> None:
        """Renames ``tmp`` to ``final``; an existing ``final`` is moved aside first."""
        if final.exists():
            self._discard(final)
        os.rename(tmp, final)
        fsync_dir(self.root)

    def _prune(self, keep: int) -> None:
        if self.keep_last is None:
            return
        others = [s for s in self.steps() if s != keep]
        surplus = len(others) + 1 - self.keep_last
        for step in others[: max(surplus, 0)]:
            self._discard(self.directory(step))

    def _discard(self, path: Path) -> None:
        """Renames ``path`` to a temporary name (atomic un-publish), then deletes it."""
        trash = self.root / f"{TMP_PREFIX}{path.name}-old-{secrets.token_hex(4)}"
        os.rename(path, trash)
        fsync_dir(self.root)
        shutil.rmtree(trash, ignore_errors=True)

    def _remove_leftovers(self) -> None:
        for entry in self.root.iterdir():
            if entry.name.startswith(TMP_PREFIX) and entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)

    def _committed_directory(self, step: int) -> Path:
        path = self.directory(step)
        if not path.is_dir():
            raise CheckpointNotFoundError(
                f"no checkpoint for step {step} in {self.root}; steps there: {self.steps()}"
            )
        return path


def _dir_name(step: int) -> str:
    return f"step_{step:08d}"


def read_state(path: Path, map_location: torch.device, *, mmap: bool = False) -> Any:
    """``torch.load(path, weights_only=True)``, or :class:`DamagedCheckpointError` in one line
    naming the file: missing, unreadable (truncated, not a torch file) or holding objects
    that safe loading refuses (altered, or not written by LightRFT; never loaded unsafely)."""
    if not path.is_file():
        raise DamagedCheckpointError(f"{path}: missing")
    try:
        return torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as error:
        raise DamagedCheckpointError(
            f"{path} holds objects that safe loading refuses ({_refused_object(error)}); a "
            "LightRFT checkpoint holds only tensors and plain values, so this file was altered "
            "or not written by LightRFT: it is not loaded"
        ) from None
    except (RuntimeError, EOFError, OSError, ValueError) as error:
        raise DamagedCheckpointError(
            f"{path} cannot be read ({type(error).__name__}: {str(error)[:200]})"
        ) from error


_REFUSED = re.compile(r"(Trying to load unsupported GLOBAL [^\n]*|Unsupported [^\n]*)")


def _refused_object(error: Exception) -> str:
    """What torch's weights-only unpickler refused, without its advice to turn it off."""
    match = _REFUSED.search(str(error))
    return match.group(1).strip().rstrip(".") if match else "not a plain tensor state"


def _lightrft_version() -> str:
    try:
        return importlib_metadata.version("lightrft")
    except importlib_metadata.PackageNotFoundError:
        return "unknown"
