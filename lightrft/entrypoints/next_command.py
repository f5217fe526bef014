"""What a user runs next when a run had to stop: the command as typed, with ``--resume``.

The CLI hands each command the words it was given (``args.argv``); a message such as a
failed final export prints :meth:`NextCommand.resume` (those words without their own
resume / overwrite settings, plus ``--resume``) or :meth:`NextCommand.start_over`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

_START_MODE = re.compile(
    r"--(resume|no[-_]resume|load[-_]checkpoint|overwrite)(=.*)?"
    r"|(checkpoint\.resume|checkpoint\.resume_changing|logging\.overwrite)=.*"
)
_STATED = "--resume-changing"


@dataclass(frozen=True)
class NextCommand:
    """The words of the command that started the run (after ``lightrft``).

    ``argv=None``: the run was not started from the command line (the messages then say
    what to change in words). ``overwrite_configured``: the configuration itself moves a
    previous run aside (the demo), so resuming needs ``logging.overwrite=false``.
    ``reruns_as_typed``: the command starts over by itself (``demo rlhf``).
    """

    argv: tuple[str, ...] | None = None
    overwrite_configured: bool = False
    reruns_as_typed: bool = False

    def resume(self) -> str:
        """The command that continues the run from its newest checkpoint."""
        if self.argv is None:
            return "the same command with --resume (checkpoint.resume=true)"
        if self.reruns_as_typed:
            return shlex.join(["lightrft", *self.argv])
        extra = ["logging.overwrite=false"] if self.overwrite_configured else []
        return shlex.join(["lightrft", *self._kept(), *extra, "--resume"])

    def start_over(self) -> str:
        """The command that moves the run aside and trains anew."""
        if self.argv is None:
            return "the same command with --overwrite (logging.overwrite=true)"
        if self.reruns_as_typed:
            return shlex.join(["lightrft", *self.argv])
        return shlex.join(["lightrft", *self._kept(), "--overwrite"])

    def _kept(self) -> list[str]:
        """``argv`` without its resume / overwrite settings and ``--resume-changing KEY..``
        (a resume after this one compares with the identity recorded then)."""
        assert self.argv is not None
        kept: list[str] = []
        stated = False
        for word in self.argv:
            if word == _STATED:
                stated = True
                continue
            if stated and not word.startswith("-") and "=" not in word:
                continue
            stated = False
            if not (word.startswith(f"{_STATED}=") or _START_MODE.fullmatch(word)):
                kept.append(word)
        return kept
