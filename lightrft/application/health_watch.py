"""HealthWatch: the training-health monitor and the collapse action, as the cycle uses them.

After every step the cycle hands its metrics (rank-averaged, evaluation included) to
:meth:`HealthWatch.after_step`, which adds the ``health/*`` metrics to them, logs one
``health.signal`` warning at the onset of each signal (rank 0; not again while it keeps
firing) and runs ``train.on_collapse`` (:mod:`collapse_rollback`). See docs/health.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from lightrft.application.collapse_rollback import CollapseGuard, CollapseOutcome
from lightrft.domain.training_health import HealthMonitor

log = structlog.get_logger(__name__)


class HealthWatch:
    """The monitor plus the collapse guard; part of the cycle's checkpointed state."""

    def __init__(self, guard: CollapseGuard) -> None:
        self.monitor = HealthMonitor(guard.params.thresholds)
        self.guard = guard
        self.rank = guard.collective.rank

    def before_update(self, step: int, metrics: Mapping[str, float]) -> None:
        """Offers the state that generated step ``step``'s rollouts as the best (rollback
        ranked by training reward). Call before the update, outside any phase."""
        self.guard.offer(step, metrics, evaluated=False)

    def after_eval(self, step: int, metrics: Mapping[str, float]) -> None:
        """Offers the just-evaluated state as the best (rollback ranked by evaluation)."""
        self.guard.offer(step, metrics, evaluated=True)

    def after_step(self, step: int, metrics: dict[str, float]) -> CollapseOutcome:
        """Judges step ``step``; adds ``health/*`` to ``metrics``; warns and acts at onsets."""
        report = self.monitor.observe(step, metrics)
        if self.rank == 0:
            for signal in report.onsets:
                log.warning(
                    "health.signal",
                    signal=signal.name,
                    step=step,
                    value=signal.value,
                    threshold=signal.threshold,
                    message=signal.message,
                )
        outcome = self.guard.respond(step, report.onsets)
        metrics.update(report.metrics)
        metrics.update(self.guard.metrics())
        return outcome

    def summary(self) -> dict[str, Any]:
        """For the run summary: every signal onset (name, step, value, threshold, message),
        the collapse action, its rollbacks and the stop step."""
        return {"signals": [s.as_dict() for s in self.monitor.onsets], **self.guard.summary()}

    def state_dict(self) -> dict[str, Any]:
        """Monitor and guard state."""
        return {"monitor": self.monitor.state_dict(), "guard": self.guard.state_dict()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict`."""
        self.monitor.load_state_dict(state["monitor"])
        self.guard.load_state_dict(state["guard"])
