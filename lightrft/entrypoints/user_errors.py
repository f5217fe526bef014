"""Errors a user can act on: one clear message and an exit status, no traceback.

``--debug`` (or ``LIGHTRFT_DEBUG=1``) prints the traceback too. Exit statuses: 2 for bad
input (configuration, paths, data, model files, run directory), 1 for a run that had to stop
(damaged checkpoints, a failing reward source, a full disk); anything else is a bug and keeps
its traceback.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback
from collections.abc import Sequence

from lightrft.adapters.checkpoint import CheckpointWriteError
from lightrft.application.reward_failures import RewardSourceFailingError
from lightrft.domain.checkpoint_health import DamagedCheckpointError, NoIntactCheckpointError
from lightrft.entrypoints.config.loading import ConfigError
from lightrft.entrypoints.run_dir.directory import RunDirectoryError

EXIT_FAILED = 1
EXIT_USAGE = 2
DEBUG_ENV = "LIGHTRFT_DEBUG"

INPUT_ERRORS: tuple[type[BaseException], ...] = (
    ConfigError,
    RunDirectoryError,
    FileNotFoundError,
    ValueError,
    KeyError,
    ImportError,
)
RUN_ERRORS: tuple[type[BaseException], ...] = (
    DamagedCheckpointError,
    NoIntactCheckpointError,
    RewardSourceFailingError,
    OSError,
)
USER_ERRORS = INPUT_ERRORS + RUN_ERRORS


def debug_requested(flag: bool, rest: Sequence[str]) -> tuple[bool, list[str]]:
    """Whether tracebacks are wanted (``--debug`` anywhere, or ``LIGHTRFT_DEBUG``), and the
    other arguments without ``--debug``."""
    env = os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    kept = [arg for arg in rest if arg != "--debug"]
    return flag or env or len(kept) != len(rest), kept


def report_error(exc: BaseException, *, debug: bool) -> int:
    """Prints ``exc`` for a user (its traceback too when ``debug``); returns the status."""
    if debug:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    prefix = "lightrft: " if isinstance(exc, ConfigError) else "lightrft: error: "
    print(prefix + describe(exc), file=sys.stderr)
    if not debug and not isinstance(exc, ConfigError):
        print(f"(--debug or {DEBUG_ENV}=1 shows the traceback)", file=sys.stderr)
    return EXIT_USAGE if isinstance(exc, INPUT_ERRORS) else EXIT_FAILED


def describe(exc: BaseException) -> str:
    """The user-facing text of ``exc``."""
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        return str(exc.args[0])
    if isinstance(exc, CheckpointWriteError):
        return str(exc.strerror)
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        where = f" writing {exc.filename}" if exc.filename else ""
        return (
            f"no space left on device{where}. Free some space; `lightrft checkpoints verify "
            "RUN_DIR` lists the checkpoints the run can continue from with --resume"
        )
    if isinstance(exc, OSError) and not str(exc).strip():
        return type(exc).__name__
    return str(exc)
