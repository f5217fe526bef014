"""SIGTERM as a request to stop cleanly: finish the step, save a checkpoint, exit 75.

:class:`GracefulStop` installs a SIGTERM handler that only records the request; the cycle
asks :meth:`GracefulStop.requested` after every step. With several ranks the answer is
agreed with an all-reduce (any rank signalled: all stop after the same step). A second
SIGTERM while stopping restores the default action and ends the process at once.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

import structlog
import torch

from lightrft.domain.ports import Collective

EXIT_STOPPED = 75
"""Exit status of a run stopped by SIGTERM after its checkpoint was written (EX_TEMPFAIL:
run the same command with --resume to continue)."""

log = structlog.get_logger(__name__)


class GracefulStop:
    """Context manager: SIGTERM sets a flag instead of killing the process."""

    def __init__(self, collective: Collective) -> None:
        self.collective = collective
        self.signalled = False
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> GracefulStop:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._on_signal)
            self._installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGTERM, self._previous)
            self._installed = False

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signalled = True
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process
        log.warning("run.stop_requested", signal="SIGTERM", action="finish step, checkpoint")

    def requested(self) -> bool:
        """Whether any rank received SIGTERM (every rank must ask at the same point)."""
        if self.collective.world_size == 1:
            return self.signalled
        flag = torch.tensor([float(self.signalled)], dtype=torch.float64)
        return bool(self.collective.all_reduce_sum(flag) > 0)
