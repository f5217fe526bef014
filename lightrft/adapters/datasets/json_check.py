"""Finding what is wrong with a JSON / JSON-lines prompt file, by line, before ``datasets``
reads it (its own errors say "An error occurred while generating the dataset")."""

from __future__ import annotations

import json
from pathlib import Path

_JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}
_EXPECTED = 'one JSON object per line, e.g. {"prompt": "...", "reference": "..."}'


def check_json_file(file: Path) -> None:
    """Raises ``ValueError`` naming the file (and line) if it is empty, or holds a line that
    is not a JSON object (JSON lines) / is not a JSON array or object (``.json``)."""
    if file.stat().st_size == 0:
        raise ValueError(f"{file} is empty: expected {_EXPECTED}")
    with open(file, encoding="utf-8", errors="replace") as f:
        first = f.read(1 << 16).lstrip()
    if not first:
        if not file.read_text(encoding="utf-8", errors="replace").strip():
            raise ValueError(f"{file} holds only whitespace: expected {_EXPECTED}")
        return
    if first.startswith("["):
        _check_array(file)
    else:
        _check_lines(file)


def _check_array(file: Path) -> None:
    try:
        json.loads(file.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ValueError(f"{file} is not valid JSON: {error}") from None


def _check_lines(file: Path) -> None:
    with open(file, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as error:
                raise ValueError(
                    f"{file} line {number} is not valid JSON ({error}): expected {_EXPECTED}"
                ) from None
            if not isinstance(row, dict):
                raise ValueError(
                    f"{file} line {number} is a JSON {_JSON_TYPES.get(type(row), 'null')}, not "
                    "an object: "
                    f"expected {_EXPECTED}"
                )
