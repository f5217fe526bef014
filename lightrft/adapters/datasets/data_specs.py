"""Data specs: one path, or several datasets as ``name:path,name:path`` (or ``path,path``).

The original LightRFT's ``--prompt_data`` takes comma-separated datasets, each optionally
named (``gsm8k:/data/gsm8k,geo3k:/data/geo3k``). An entry that is an existing path is read
as a path even when it holds a colon; otherwise the part before the first colon is the name
(no ``/`` in it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DataSpec:
    """One dataset of a spec: its name (None: unnamed) and its path."""

    name: str | None
    path: Path


def parse_data_specs(text: str) -> list[DataSpec]:
    """The datasets of ``text``; ``ValueError`` for an empty entry or a name used twice."""
    specs = [_entry(entry.strip(), text) for entry in text.split(",")]
    names = [s.name for s in specs if s.name is not None]
    if len(set(names)) != len(names):
        raise ValueError(f"dataset names must be unique in {text!r}, got {names}")
    return specs


def _entry(entry: str, text: str) -> DataSpec:
    if not entry:
        raise ValueError(f"empty dataset entry in {text!r} (expected path or name:path, ...)")
    name, colon, rest = entry.partition(":")
    if not colon or Path(entry).exists() or not name or "/" in name or not rest:
        return DataSpec(None, Path(entry).expanduser())
    return DataSpec(name, Path(rest).expanduser())
