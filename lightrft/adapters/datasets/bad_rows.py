"""The error of a prompt row that cannot become a prompt."""

from __future__ import annotations


class BadRowError(ValueError):
    """A row that cannot become a prompt; the message names its file, row and key."""

    def __init__(self, where: str, key: str, problem: str) -> None:
        super().__init__(f"{where}: {problem} {key!r}")
        self.where, self.key, self.problem = where, key, problem
