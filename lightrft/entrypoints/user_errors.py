"""Errors a user can act on: one clear message and an exit status, no traceback.

``--debug`` (or ``LIGHTRFT_DEBUG=1``) prints the traceback too. Exit statuses: 2 for bad
input (configuration, paths, data, model files, run directory), 1 for a run that had to stop
(damaged checkpoints, a failing reward source, a full disk); anything else is a bug and keeps
its traceback.

The error classes are named by module and class, not imported: this module is imported by
the CLI before it parses its arguments, and the modules defining them import torch. An
exception of a class whose module was never imported cannot have been raised, so the
classes are read from ``sys.modules`` when an error is classified (:func:`user_errors`).
A full disk reported by a library that does not raise ``OSError`` (safetensors'
``SafetensorError``) is mapped where the files are written, see
:func:`lightrft.adapters.checkpoint.directory_swap.io_error`.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback
from collections.abc import Sequence

EXIT_FAILED = 1
EXIT_USAGE = 2
DEBUG_ENV = "LIGHTRFT_DEBUG"

_CONFIG_ERROR = ("lightrft.entrypoints.config.loading", "ConfigError")
_WRITE_ERROR = ("lightrft.adapters.checkpoint.local_store", "CheckpointWriteError")
_RUN_WRITE_ERROR = ("lightrft.entrypoints.run_dir.log_write", "RunWriteError")
INPUT_ERRORS: tuple[type[BaseException] | tuple[str, str], ...] = (
    _CONFIG_ERROR,
    ("lightrft.entrypoints.run_dir.directory", "RunDirectoryError"),
    FileNotFoundError,
    ValueError,
    KeyError,
    ImportError,
)
RUN_ERRORS: tuple[type[BaseException] | tuple[str, str], ...] = (
    ("lightrft.domain.checkpoint_health", "DamagedCheckpointError"),
    ("lightrft.domain.checkpoint_health", "NoIntactCheckpointError"),
    ("lightrft.application.reward_failures", "RewardSourceFailingError"),
    ("lightrft.domain.async_errors", "ProducerDiedError"),
    ("lightrft.application.policy_optimizer", "NonFiniteWeightsError"),
    OSError,
)


def _loaded(kinds: Sequence[type[BaseException] | tuple[str, str]]) -> tuple[type, ...]:
    """The classes of ``kinds`` whose modules are imported (see the module docstring)."""
    classes: list[type] = []
    for kind in kinds:
        if isinstance(kind, type):
            classes.append(kind)
        elif kind[0] in sys.modules and isinstance(
            getattr(sys.modules[kind[0]], kind[1], None), type
        ):
            classes.append(getattr(sys.modules[kind[0]], kind[1]))
    return tuple(classes)


def is_input_error(exc: BaseException) -> bool:
    """Whether ``exc`` is bad input (exit status 2)."""
    return isinstance(exc, _loaded(INPUT_ERRORS))


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` is an error a user can act on (one line, no traceback)."""
    return isinstance(exc, _loaded(INPUT_ERRORS + RUN_ERRORS))


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
    config_error = isinstance(exc, _loaded((_CONFIG_ERROR,)))
    prefix = "lightrft: " if config_error else "lightrft: error: "
    print(prefix + describe(exc), file=sys.stderr)
    if not debug and not config_error:
        print(f"(--debug or {DEBUG_ENV}=1 shows the traceback)", file=sys.stderr)
    return EXIT_USAGE if is_input_error(exc) else EXIT_FAILED


def describe(exc: BaseException) -> str:
    """The user-facing text of ``exc``."""
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        return str(exc.args[0])
    if isinstance(exc, _loaded((_WRITE_ERROR, _RUN_WRITE_ERROR))):
        return str(exc.strerror)
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        where = f" writing {exc.filename}" if exc.filename else ""
        return (
            f"no space left on device{where}. Free some space; `lightrft checkpoints verify "
            "RUN_DIR` lists the checkpoints the run can continue from with --resume (with "
            "none, start it again with --overwrite)"
        )
    if isinstance(exc, OSError) and not str(exc).strip():
        return type(exc).__name__
    return str(exc)
