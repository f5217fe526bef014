"""The local rank of this process, as ``torchrun`` sets it (``LOCAL_RANK``, default 0)."""

from __future__ import annotations

import os


def local_rank() -> int:
    """``int(LOCAL_RANK)``, or 0 outside a launcher; a clear error on a malformed value."""
    raw = os.environ.get("LOCAL_RANK", "0")
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"LOCAL_RANK must be an integer, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"LOCAL_RANK must be >= 0, got {value}")
    return value
