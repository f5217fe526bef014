"""Rows written as a JSON-lines file, atomically (the one writer the recipes and jobs share)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: Path) -> Path:
    """Writes ``rows`` to ``path``, one JSON object per line (UTF-8, non-ASCII kept), through
    a temporary file beside it renamed into place, so a reader never sees half a file;
    creates the parent folder; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    temporary.replace(path)
    return path
