"""Durability helpers: ``fsync`` of files and directories so a rename commits real data."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_file(path: Path) -> None:
    """Flushes the file at ``path`` from the OS cache to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Flushes the entries of directory ``path`` (new names, renames) to the disk.

    A no-op on platforms that cannot open directories (Windows).
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except (IsADirectoryError, PermissionError):  # pragma: no cover - Windows
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    """Flushes every file and directory below ``root`` (and ``root`` itself)."""
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            fsync_file(Path(dirpath) / name)
        fsync_dir(Path(dirpath))
