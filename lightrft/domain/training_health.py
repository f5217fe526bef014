"""The training-health monitor: every registered check over every step's metrics.

:class:`HealthMonitor` feeds one step's logged metrics to each check of
:data:`~lightrft.domain.health_checks.HEALTH_CHECKS` and returns a :class:`HealthReport`:
the ``health/*`` metrics to log (each check's value, ``health/fired/<signal>`` 0/1, and
``health/alarm``, the number of signals firing), the signals firing at this step, and the
*onsets* among them (firing now but not at the previous observed step), which are what the
cycle warns about and acts on, so a lasting problem is reported once, not every step.
A check whose metric (or one of its context metrics) was not logged at a step (no reference
model, no mismatch measurement) is skipped at that step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from lightrft.domain.health_checks import HEALTH_CHECKS, HealthCheck, HealthThresholds

__all__ = ["HealthMonitor", "HealthReport", "HealthSignal", "HealthThresholds"]

ALARM_METRIC = "health/alarm"
FIRED_PREFIX = "health/fired/"


@dataclass(frozen=True)
class HealthSignal:
    """A check that fired: its name, the step, its value and threshold, whether it signals a
    collapse (``train.on_collapse`` acts on those), and a one-line message."""

    name: str
    step: int
    value: float
    threshold: float
    collapse: bool
    message: str

    def as_dict(self) -> dict[str, Any]:
        """Plain fields (for summaries and checkpoints)."""
        return asdict(self)


@dataclass(frozen=True)
class HealthReport:
    """One step's ``health/*`` metrics, the signals firing and the onsets among them."""

    metrics: dict[str, float]
    fired: tuple[HealthSignal, ...]
    onsets: tuple[HealthSignal, ...]


def fired_metric(signal: str) -> str:
    """The 0/1 metric that says whether ``signal`` fired at a step."""
    return f"{FIRED_PREFIX}{signal}"


class HealthMonitor:
    """Runs the registered health checks; remembers what it needs across steps.

    Observe every step once, in order; :meth:`state_dict` holds every detector's state, so a
    resumed run reports exactly what an uninterrupted one would.
    """

    def __init__(self, thresholds: HealthThresholds | None = None) -> None:
        t = thresholds or HealthThresholds()
        self.checks: dict[str, HealthCheck] = {
            name: HEALTH_CHECKS.get(name) for name in HEALTH_CHECKS
        }
        self.detectors = {name: check.make(t) for name, check in self.checks.items()}
        self.active: list[str] = []  # signals that fired at the last observed step
        self.onsets: list[HealthSignal] = []  # every onset so far, in order

    def observe(self, step: int, metrics: Mapping[str, float]) -> HealthReport:
        """Judges step ``step`` (as logged) from its ``metrics``."""
        health: dict[str, float] = {}
        fired: list[HealthSignal] = []
        for name, check in self.checks.items():
            source = next((key for key in check.sources if key in metrics), None)
            if source is None or any(key not in metrics for key in check.context):
                continue
            present = (*check.context, *(key for key in check.extra if key in metrics))
            context = {key: float(metrics[key]) for key in present}
            reading = self.detectors[name].observe(float(metrics[source]), context)
            if reading is None:
                continue
            health[check.metric] = reading.value
            health[fired_metric(name)] = float(reading.fired)
            if reading.fired:
                message = f"{name} at step {step}: {reading.detail}"
                fired.append(
                    HealthSignal(
                        name,
                        step,
                        reading.value,
                        reading.threshold,
                        check.collapse and reading.collapse,
                        message,
                    )
                )
        onsets = tuple(s for s in fired if s.name not in self.active)
        self.active = [s.name for s in fired]
        self.onsets.extend(onsets)
        health[ALARM_METRIC] = float(len(fired))
        return HealthReport(health, tuple(fired), onsets)

    def state_dict(self) -> dict[str, Any]:
        """Detector states, the active signals and the onsets so far (plain values)."""
        return {
            "detectors": {name: d.state_dict() for name, d in self.detectors.items()},
            "active": list(self.active),
            "onsets": [s.as_dict() for s in self.onsets],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict` (a check missing from it starts afresh)."""
        for name, detector_state in state["detectors"].items():
            if name in self.detectors:
                self.detectors[name].load_state_dict(detector_state)
        self.active = [str(name) for name in state["active"]]
        self.onsets = [HealthSignal(**signal) for signal in state["onsets"]]
