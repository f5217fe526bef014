"""Sizes and fast checksums of a checkpoint's files, and checking them again.

A manifest maps each file's path (relative to the checkpoint directory, ``/``-separated) to
``{"size": bytes, "xxh3_128": hex digest}``. xxHash3 runs at memory speed, so checking a
multi-gigabyte checkpoint at resume costs about as much as reading it once.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import xxhash

HASH_NAME = "xxh3_128"
_CHUNK = 8 << 20


def file_digest(path: Path) -> str:
    """The xxh3-128 hex digest of the file at ``path`` (read in 8 MiB chunks)."""
    digest = xxhash.xxh3_128()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _files(root: Path, exclude: Iterable[str]) -> list[str]:
    skipped = set(exclude)
    found = []
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            rel = (Path(dirpath) / name).relative_to(root).as_posix()
            if rel not in skipped:
                found.append(rel)
    return sorted(found)


def build_manifest(root: Path, exclude: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """``{relative path: {"size", "xxh3_128"}}`` of every file below ``root``."""
    return {
        rel: {"size": (root / rel).stat().st_size, HASH_NAME: file_digest(root / rel)}
        for rel in _files(root, exclude)
    }


def check_manifest(root: Path, manifest: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Problems of the files below ``root`` against ``manifest``; empty when all match.

    Each problem names the file and what differs (missing, size, checksum). Sizes are checked
    before checksums, so a truncated file is reported without hashing it.
    """
    problems = []
    for rel, expected in sorted(manifest.items()):
        path = root / rel
        if not path.is_file():
            problems.append(f"{path}: missing")
            continue
        size = path.stat().st_size
        if size != expected["size"]:
            problems.append(f"{path}: {size} bytes, expected {expected['size']} (truncated?)")
        elif file_digest(path) != expected[HASH_NAME]:
            problems.append(f"{path}: checksum differs from the one recorded at save time")
    return problems
