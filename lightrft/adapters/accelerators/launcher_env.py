"""Ranks of this process as ``torchrun`` sets them (``LOCAL_RANK``, ``RANK``; default 0)."""

from __future__ import annotations

import os


def env_rank(name: str) -> int:
    """``int(os.environ[name])``, or 0 outside a launcher; a clear error on a malformed value."""
    raw = os.environ.get(name, "").strip() or "0"
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def local_rank() -> int:
    """The rank on this node (``LOCAL_RANK``): which device this process drives."""
    return env_rank("LOCAL_RANK")


def global_rank() -> int:
    """The rank among all processes (``RANK``): 0 is the one that logs and reports."""
    return env_rank("RANK")
