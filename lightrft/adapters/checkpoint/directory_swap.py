"""Writing a whole directory (an exported model) so that it is complete or absent.

:func:`replace_directory` lets ``write`` fill a fresh temporary sibling, flushes it to disk,
then renames it to the target (a target from before is renamed aside first and deleted
after). A failure while writing removes the temporary directory and leaves the target as
it was: never a model directory with its config files but no weights.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path

from lightrft.adapters.checkpoint.fs_sync import fsync_dir, fsync_tree


def replace_directory(target: Path, write: Callable[[Path], object]) -> Path:
    """Calls ``write(tmp)`` on an empty sibling directory of ``target``, then puts it in
    place of ``target``; returns ``target``. Exceptions of ``write`` (or of the flush and
    the renames) propagate after the temporary directory is removed."""
    target = Path(target)
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    for leftover in parent.glob(f".{target.name}.tmp-*"):  # of a writer killed earlier
        shutil.rmtree(leftover, ignore_errors=True)
    token = secrets.token_hex(4)
    tmp = parent / f".{target.name}.tmp-{token}"
    tmp.mkdir()
    try:
        write(tmp)
        fsync_tree(tmp)
        _swap_in(tmp, target, parent / f".{target.name}.old-{token}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already after a successful swap
    return target


def _swap_in(tmp: Path, target: Path, old: Path) -> None:
    """Renames ``tmp`` to ``target``; a previous ``target`` goes to ``old``, then away."""
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
    if had_previous:
        shutil.rmtree(old, ignore_errors=True)
