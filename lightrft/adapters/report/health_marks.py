"""Where training-health signals started, read back from the ``health/fired/<signal>`` series.

The cycle logs ``health/fired/<signal>`` (0 or 1) at every step a check could judge
(:mod:`lightrft.domain.training_health`); a signal starts at a step where it is 1 and was
not 1 at the step before. The report lists these onsets and marks them on the plots.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lightrft.adapters.report.reading import Series, value_at
from lightrft.domain.health_checks import HEALTH_CHECKS
from lightrft.domain.training_health import FIRED_PREFIX


@dataclass(frozen=True)
class HealthOnset:
    """A signal that started firing at ``step`` and fired ``steps`` consecutive logged steps;
    ``value`` is its ``health/*`` metric then (``None`` for a check this version lacks)."""

    signal: str
    step: int
    steps: int
    value: float | None


def health_onsets(series: Mapping[str, Series]) -> list[HealthOnset]:
    """Every onset of every signal, by step then name."""
    onsets: list[HealthOnset] = []
    for name, points in series.items():
        if not name.startswith(FIRED_PREFIX):
            continue
        signal = name[len(FIRED_PREFIX) :]
        metric = HEALTH_CHECKS.get(signal).metric if signal in HEALTH_CHECKS else None
        runs: list[list[int]] = []  # [first step, consecutive steps]
        last_fired: int | None = None  # the previous point's step, if it fired
        for step, fired in points:
            if fired < 0.5:
                last_fired = None
                continue
            if last_fired == step - 1:
                runs[-1][1] += 1
            else:
                runs.append([step, 1])
            last_fired = step
        for first, length in runs:
            value = (
                value_at(series[metric], first) if metric is not None and metric in series else None
            )
            onsets.append(HealthOnset(signal, first, length, value))
    return sorted(onsets, key=lambda o: (o.step, o.signal))
