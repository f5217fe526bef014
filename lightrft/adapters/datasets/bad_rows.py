"""Bad rows: the error of one row that cannot be used, and the report of all of them.

Every loader of this package (RL prompts, SFT rows, preference pairs) reads its rows through
a :class:`BadRows` log: with ``on_bad_row="error"`` it reads on past a bad row and then raises
one :class:`BadRowsError` naming every bad row (the first :data:`MAX_LISTED`, then how many
more), so a user fixes a file in one pass; with ``"skip"`` it counts them. A file's lines that
do not even parse (:mod:`json_check`) are named in that same error (:func:`with_bad_lines`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

T = TypeVar("T")

BadRowPolicy = Literal["error", "skip"]

MAX_LISTED = 20
"""Bad rows a :class:`BadRowsError` names one by one; the rest are counted."""


class BadRowError(ValueError):
    """A row that cannot be used; the message names its file, row and key."""

    def __init__(self, where: str, key: str, problem: str) -> None:
        super().__init__(f"{where}: {problem} {key!r}")
        self.where, self.key, self.problem = where, key, problem


class BadRowsError(BadRowError):
    """Every bad row of a source (``errors``: the first ones listed; ``count``: all).

    ``where``, ``key`` and ``problem`` are the first bad row's; with one bad row the message
    is that row's own one-line message.
    """

    def __init__(self, errors: list[BadRowError], count: int) -> None:
        if not errors or count < len(errors):
            raise ValueError(f"need 1 to {count} listed errors, got {len(errors)}")
        first = errors[0]
        super().__init__(first.where, first.key, first.problem)
        self.errors, self.count = tuple(errors), count
        self.args = first.args
        if count > 1:
            lines = [f"{count} bad rows:", *(f"  {error}" for error in errors)]
            if count > len(errors):
                lines.append(f"  ... and {count - len(errors)} more")
            self.args = ("\n".join(lines),)


class BadRows:
    """The bad rows met while reading a source, under one :data:`BadRowPolicy`."""

    def __init__(self, policy: BadRowPolicy, *, limit: int = MAX_LISTED) -> None:
        if policy not in ("error", "skip"):
            raise ValueError(f"on_bad_row must be error or skip, got {policy!r}")
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        self.policy, self.limit = policy, limit
        self.count = 0
        self._listed: list[BadRowError] = []

    def add(self, error: BadRowError) -> None:
        """Records one bad row (the reader goes on with the next row)."""
        self.count += 1
        if len(self._listed) < self.limit:
            self._listed.append(error)

    def check(self) -> int:
        """The number of bad rows (skipped under ``"skip"``); under ``"error"`` any bad row
        raises :class:`BadRowsError`."""
        if self.policy == "error" and self.count:
            raise BadRowsError(self._listed, self.count)
        return self.count


def with_bad_lines(lines: Sequence[BadRowError], read: Callable[[], T]) -> T:
    """``read()`` (the loader checking the rows that parsed), reporting the bad ``lines`` of
    the file (left out of those rows, :func:`~hf_prompt_dataset.read_table` with
    ``defer_bad_lines``) in one :class:`BadRowsError` with the rows ``read`` refuses: every
    bad line and row of a file in one message, lines first (the first :data:`MAX_LISTED`
    named). Without bad lines, ``read()`` as it is."""
    if not lines:
        return read()
    rows: list[BadRowError] = []
    count = 0
    try:
        read()
    except BadRowsError as error:
        rows, count = list(error.errors), error.count
    except BadRowError as error:
        rows, count = [error], 1
    except ValueError:
        pass  # e.g. no usable row left: the bad lines are the cause to name
    listed = [*lines, *rows][:MAX_LISTED]
    raise BadRowsError(listed, len(lines) + count)


def text_field(row: Mapping[str, Any], key: str, where: str) -> str:
    """``row[key]`` as non-empty text; :class:`BadRowError` otherwise."""
    value = row.get(key)
    if value is None:
        raise BadRowError(where, key, "missing key")
    if not isinstance(value, str) or not value.strip():
        raise BadRowError(where, key, "expected a non-empty string in")
    return value
