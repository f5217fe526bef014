"""A run's own files (``metrics.jsonl``, ``samples.jsonl``) that cannot be written: one
message naming the file and what to do, with advice that fits what the run has kept.

A full disk while a run logs used to say "``lightrft checkpoints verify RUN_DIR`` lists the
checkpoints the run can continue from with --resume" whether or not it had any (RD16: with
``checkpoint.every`` unset it had none). Now a run with checkpoints is told its newest step
and the resume command; a run without is told there is nothing to resume from, how to start
again, and that ``checkpoint.every`` keeps progress across such a stop.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from lightrft.adapters.checkpoint.local_store import CheckpointWriteError
from lightrft.entrypoints.next_command import NextCommand

FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class RunWriteError(OSError):
    """A file of the run could not be written while it trained; the message says what is
    kept and what to run (``errno`` is the cause's)."""


def is_full_disk(error: BaseException) -> bool:
    """Whether ``error`` is a full disk, a quota or a file-size limit."""
    return isinstance(error, OSError) and error.errno in FULL


def run_write_failure(
    error: OSError, checkpoints: Sequence[int], where: Path, next_command: NextCommand
) -> RunWriteError:
    """The one error for ``error`` raised while the run wrote its logs; ``checkpoints``: the
    steps of the run's checkpoints in ``where``."""
    cause = error.strerror or (os.strerror(error.errno) if error.errno else type(error).__name__)
    name = error.filename if error.filename else "a file of the run"
    head = f"cannot write {name} ({cause}): free some space there"
    if checkpoints:
        text = (
            f"{head}. The newest checkpoint is step {max(checkpoints)} in {where}; then run: "
            f"{next_command.resume()} (it trains the steps after {max(checkpoints)} again)"
        )
    else:
        text = (
            f"{head}. This run has no checkpoint, so there is nothing to resume from: start "
            f"it again with {next_command.start_over()}. To keep the progress of a run across "
            "such a stop, save checkpoints (checkpoint.every=N)"
        )
    return RunWriteError(error.errno, text)


@contextmanager
def full_disk_explained(
    checkpoints: Callable[[], Sequence[int]], where: Path, next_command: NextCommand
) -> Iterator[None]:
    """Turns a full disk raised in the body (the run's logs) into :func:`run_write_failure`;
    ``checkpoints()``: the steps of the run's checkpoints then. A checkpoint that cannot be
    written keeps its own message (:class:`CheckpointWriteError`)."""
    try:
        yield
    except OSError as error:
        if not is_full_disk(error) or isinstance(error, (CheckpointWriteError, RunWriteError)):
            raise
        raise run_write_failure(error, checkpoints(), where, next_command) from error
