"""Finding what is wrong with a JSON / JSON-lines prompt file, by line, before ``datasets``
reads it (its own errors say "An error occurred while generating the dataset").

A JSON-lines file is read line by line: a line that is not UTF-8, not JSON, or not a JSON
object (or nested too deep for the parser: a ``RecursionError``) is a bad line. With
``on_bad_row="error"`` one :class:`~lightrft.adapters.datasets.bad_rows.BadRowsError` names
every bad line (the first :data:`~lightrft.adapters.datasets.bad_rows.MAX_LISTED`, then how
many more); with ``"skip"`` their numbers are returned so the reader leaves them out and
counts them with the skipped rows. An empty file, a blank one, and a ``.json`` array that
does not parse are always errors.
"""

from __future__ import annotations

import json
from pathlib import Path

from lightrft.adapters.datasets.bad_rows import BadRowError, BadRowPolicy, BadRows

_JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}
_TOO_DEEP = "JSON nested too deep to parse (RecursionError)"
_EXPECTED = 'one JSON object per line, e.g. {"prompt": "...", "reference": "..."}'


def check_json_file(file: Path, on_bad_row: BadRowPolicy = "error") -> list[int]:
    """Raises ``ValueError`` naming the file (and line) if it is empty, or holds a line that
    is not a JSON object (JSON lines) / is not a JSON array or object (``.json``); under
    ``"skip"`` returns the numbers (from 1) of the bad lines instead."""
    errors = json_line_errors(file)
    log = BadRows(on_bad_row)
    for error in errors:
        log.add(error)
    log.check()
    return [error.number for error in errors]


def json_line_errors(file: Path) -> list[BadLineError]:
    """The bad lines of a JSON-lines file, one :class:`BadLineError` each (none for a
    ``.json`` array); raises ``ValueError`` for an empty or blank file or a ``.json`` array
    that does not parse (nothing of those can be read)."""
    if file.stat().st_size == 0:
        raise ValueError(f"{file} is empty: expected {_EXPECTED}")
    with open(file, encoding="utf-8", errors="replace") as f:
        first = f.read(1 << 16).lstrip()
    if not first:
        if not file.read_text(encoding="utf-8", errors="replace").strip():
            raise ValueError(f"{file} holds only whitespace: expected {_EXPECTED}")
        return []
    if first.startswith("["):
        _check_array(file)
        return []
    return [
        BadLineError(f"{file} line {number}", f"{problem}: expected {_EXPECTED}", number)
        for number, problem in bad_lines(file)
    ]


class BadLineError(BadRowError):
    """A JSON-lines line that is not a JSON object; the message names the file and line."""

    def __init__(self, where: str, problem: str, number: int = 0) -> None:
        super().__init__(where, "", problem)
        self.args = (f"{where} {problem}",)
        self.number = number  # the line's, from 1


def _check_array(file: Path) -> None:
    try:
        json.loads(file.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ValueError(f"{file} is not UTF-8 text (byte {error.start})") from None
    except ValueError as error:
        raise ValueError(f"{file} is not valid JSON: {error}") from None
    except RecursionError:
        raise ValueError(f"{file} is {_TOO_DEEP}") from None


def bad_lines(file: Path) -> list[tuple[int, str]]:
    """``(line number, what is wrong)`` of each non-blank line that is not a JSON object."""
    bad: list[tuple[int, str]] = []
    with open(file, "rb") as f:
        for number, raw in enumerate(f, start=1):
            problem = _line_problem(raw)
            if problem is not None:
                bad.append((number, problem))
    return bad


def _line_problem(raw: bytes) -> str | None:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"is not UTF-8 text (byte {error.start} of the line)"
    if not line.strip():
        return None
    try:
        row = json.loads(line)
    except ValueError as error:
        return f"is not valid JSON ({error})"
    except RecursionError:
        return f"is {_TOO_DEEP}"
    if not isinstance(row, dict):
        return f"is a JSON {_JSON_TYPES.get(type(row), 'null')}, not an object"
    return None
