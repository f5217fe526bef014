"""structlog configuration: a human console by default, JSON lines with a flag."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(*, json_logs: bool = False, level: int = logging.INFO, rank: int = 0) -> None:
    """Configures structlog once for the process; ranks other than 0 log warnings only."""
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
            level if rank == 0 else logging.WARNING
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
