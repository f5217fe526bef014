"""What to do when a model directory cannot be written (``checkpoints export``, the final
export of ``train`` / ``sft`` / ``rm train``): advice for that path and that model.

A full disk names the filesystem the directory is on (its mount point), the space the model
needs (the bytes of its tensors) and the space free there, and how much more to free (or
that a filesystem with that much room will do); a quota, a read-only filesystem and a
missing permission each get their own advice. Other errors are named as they are.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_FULL = (errno.ENOSPC, errno.EFBIG)


def state_bytes(state: Mapping[str, Any]) -> int:
    """The bytes of the tensors of a model state (what its safetensors files hold, about)."""
    return sum(
        int(value.numel()) * int(value.element_size())
        for value in state.values()
        if hasattr(value, "numel") and hasattr(value, "element_size")
    )


def size_text(n: int) -> str:
    """``n`` bytes for a reader: ``1.5 GiB``, ``12.0 MiB``, ``300 KiB``."""
    if n >= 2**30:
        return f"{n / 2**30:.1f} GiB"
    if n >= 2**20:
        return f"{n / 2**20:.1f} MiB"
    return f"{max(1, round(n / 2**10))} KiB"


def existing_parent(path: Path) -> Path:
    """``path``'s nearest directory that exists (where the space is counted)."""
    path = path.absolute()
    for place in (path, *path.parents):
        if place.is_dir():
            return place
    return Path(path.anchor)


def mount_point(path: Path) -> Path:
    """The mount point of the filesystem holding ``path`` (an existing directory)."""
    place = path.resolve()
    device = os.stat(place).st_dev
    while place.parent != place and os.stat(place.parent).st_dev == device:
        place = place.parent
    return place


def write_failure_advice(target: Path, error: OSError, needed: int | None) -> str:
    """``(cause; advice)`` for writing ``target`` (a directory) failing with ``error``;
    ``needed``: the bytes the model needs (None: unknown)."""
    where = existing_parent(target.parent)
    cause = error.strerror or str(error)
    try:
        free = shutil.disk_usage(where).free
        mount = mount_point(where)
    except OSError:
        return f"{cause}; free space unknown: free some space there or choose another directory"
    on = f"{mount}" if mount == where else f"{mount} (the filesystem of {where})"
    code = error.errno if error.errno is not None else _errno_in(str(error))
    if code in _FULL:
        if needed is None:
            return (
                f"{cause}; {size_text(free)} free on {on}: free some space there, or choose a "
                "directory on another filesystem"
            )
        if free < needed:
            return (
                f"{cause}; the model needs about {size_text(needed)} and {on} has "
                f"{size_text(free)} free: free at least {size_text(needed - free)} more there, "
                f"or choose a directory on a filesystem with {size_text(needed)} free"
            )
        return (
            f"{cause}; the model needs about {size_text(needed)} and {on} has "
            f"{size_text(free)} free now (something else filled it meanwhile, or the copy the "
            "write swaps in needs the room twice): keep that much free there while it writes, "
            "or choose another filesystem"
        )
    if code == errno.EDQUOT:
        need = f" (the model needs about {size_text(needed)})" if needed is not None else ""
        return f"{cause}: your disk quota on {mount} is used up{need}: free some of it, or ask for more"
    if code == errno.EROFS:
        return f"{cause}: {mount} is mounted read-only; choose a directory on a writable filesystem"
    if code in (errno.EACCES, errno.EPERM):
        return f"{cause}: no permission to write in {where}; choose a directory you can write"
    return f"{cause}; {size_text(free)} free on {on}"


def _errno_in(text: str) -> int | None:
    """The errno a message names, for errors that lost it (safetensors' I/O errors)."""
    for code in (*_FULL, errno.EDQUOT, errno.EROFS, errno.EACCES):
        if os.strerror(code) in text:
            return code
    return None
