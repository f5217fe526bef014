"""Writing a whole directory (an exported model) so that it is complete or absent.

:func:`replace_directory` lets ``write`` fill a fresh temporary sibling, flushes it to disk,
then renames it to the target (a target from before is renamed aside first and deleted
after, or kept at ``previous_to`` when given). A failure while writing removes the temporary
directory and leaves the target as it was: never a model directory with its config files but
no weights.

A write that fails for lack of room or another I/O error raises ``OSError`` whatever library
wrote the file: safetensors reports such failures as ``SafetensorError`` (not an
``OSError``), which :func:`replace_directory` turns into an ``OSError`` with the same text
(``errno`` ``ENOSPC`` for a full disk), so every writer's caller handles one exception type.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path

from safetensors import SafetensorError

from lightrft.adapters.checkpoint.fs_sync import fsync_dir, fsync_tree

_NO_SPACE = ("no space left on device", "os error 28", "disk quota exceeded")


def replace_directory(
    target: Path, write: Callable[[Path], object], *, previous_to: Path | None = None
) -> Path:
    """Calls ``write(tmp)`` on an empty sibling directory of ``target``, then puts it in
    place of ``target``; returns ``target``. A previous ``target`` is deleted, or renamed to
    ``previous_to`` when given (nothing deleted). Exceptions of ``write`` (or of the flush
    and the renames) propagate after the temporary directory is removed; a safetensors I/O
    failure propagates as ``OSError`` (see the module docstring)."""
    target = Path(target)
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    for leftover in parent.glob(f".{target.name}.tmp-*"):  # of a writer killed earlier
        shutil.rmtree(leftover, ignore_errors=True)
    token = secrets.token_hex(4)
    tmp = parent / f".{target.name}.tmp-{token}"
    tmp.mkdir()
    try:
        try:
            write(tmp)
        except SafetensorError as error:
            raise io_error(error) from error
        fsync_tree(tmp)
        _swap_in(tmp, target, previous_to or parent / f".{target.name}.old-{token}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already after a successful swap
    if previous_to is None:
        shutil.rmtree(parent / f".{target.name}.old-{token}", ignore_errors=True)
    return target


def io_error(error: Exception) -> OSError:
    """``error`` (a failed write reported as another exception type) as an ``OSError``:
    ``errno`` ``ENOSPC`` when its text says the disk is full, the text kept."""
    text = str(error)
    full = any(mark in text.lower() for mark in _NO_SPACE)
    return OSError(errno.ENOSPC if full else errno.EIO, f"{type(error).__name__}: {text}")


def _swap_in(tmp: Path, target: Path, old: Path) -> None:
    """Renames ``tmp`` to ``target``; a previous ``target`` goes to ``old`` first."""
    had_previous = target.exists()
    if had_previous:
        os.rename(target, old)
    try:
        os.rename(tmp, target)
    except OSError:
        if had_previous:
            os.rename(old, target)
        raise
    fsync_dir(target.parent)
