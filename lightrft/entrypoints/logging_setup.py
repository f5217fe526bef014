"""structlog configuration: a human console by default, JSON lines on request.

Under ``torchrun`` every process runs the CLI; only global rank 0 (env ``RANK``) logs INFO,
the others WARNING and above. The CLI configures logging before the run config is read
(``--json-logs``); once it is, :func:`apply_config_logging` switches to JSON lines when the
config's ``logging.json_logs`` asks for it. Configuring again replaces the previous setup,
and loggers taken earlier (module-level ``structlog.get_logger()``) follow it.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, replace

import structlog

from lightrft.adapters.accelerators.launcher_env import global_rank


@dataclass(frozen=True)
class LogSettings:
    """What :func:`configure_logging` applied. ``level`` is rank 0's threshold."""

    json_logs: bool
    level: int
    rank: int


_current: LogSettings | None = None


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is at the time of the write, not at configuration:
    a stream swapped after configuring (a test's capture, a daemon's redirect) never leaves
    the loggers writing into a closed file."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(
    *, json_logs: bool = False, level: int = logging.INFO, rank: int | None = None
) -> LogSettings:
    """Configures structlog for the process and returns the settings applied.

    ``rank`` defaults to :func:`global_rank` (env ``RANK``); ranks other than 0 log
    warnings and errors only. Calling it again reconfigures (the same arguments give the
    same setup).
    """
    global _current
    settings = LogSettings(json_logs, level, global_rank() if rank is None else rank)
    processors: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso" if json_logs else "%H:%M:%S"),
    ]
    if json_logs:
        processors += [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]
    else:
        processors.append(structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()))
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(
            level if settings.rank == 0 else max(level, logging.WARNING)
        ),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
    _current = settings
    return settings


def apply_config_logging(*, json_logs: bool) -> LogSettings:
    """Applies the run config's ``logging.json_logs`` after the config is loaded.

    JSON lines when the config or the earlier ``--json-logs`` flag asks for them; the rank
    and level of the earlier :func:`configure_logging` call are kept (defaults if none).
    """
    previous = _current or LogSettings(False, logging.INFO, global_rank())
    wanted = replace(previous, json_logs=previous.json_logs or json_logs)
    return configure_logging(json_logs=wanted.json_logs, level=wanted.level, rank=wanted.rank)
