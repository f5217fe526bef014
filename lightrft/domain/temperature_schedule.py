"""A sampling temperature that changes over a run's steps (``rollout.temperature_schedule``).

The schedule is a list of ``(step, temperature)`` points with increasing steps; the
temperature of a step between two points is interpolated linearly, before the first point
it is the first point's and after the last the last point's. A hot start followed by a
cooler rest ("anneal") keeps early samples diverse while the policy is still finding its
answer form, and makes later rewards steadier (docs/algorithms.md, "Temperature schedule").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TemperatureSchedule:
    """Piecewise-linear sampling temperature over 1-based training steps."""

    points: tuple[tuple[int, float], ...]

    def __post_init__(self) -> None:
        if not self.points:
            raise ValueError("a temperature schedule needs at least one (step, temperature) point")
        previous = 0
        for step, temperature in self.points:
            if step <= previous:
                raise ValueError(
                    "temperature schedule steps must be >= 1 and increasing, got "
                    f"{[s for s, _ in self.points]}"
                )
            if temperature < 0:
                raise ValueError(
                    f"temperature schedule: step {step} has temperature {temperature} < 0"
                )
            previous = step

    @classmethod
    def of(cls, points: Sequence[Sequence[float]]) -> TemperatureSchedule:
        """The schedule of ``[step, temperature]`` pairs (as a config lists them)."""
        return cls(tuple((int(step), float(temperature)) for step, temperature in points))

    @property
    def final(self) -> float:
        """The temperature after the last point."""
        return self.points[-1][1]

    def at(self, step: int) -> float:
        """The sampling temperature of ``step``."""
        first_step, first_temperature = self.points[0]
        if step <= first_step:
            return first_temperature
        for (s0, t0), (s1, t1) in zip(self.points, self.points[1:], strict=False):
            if step <= s1:
                return t0 + (t1 - t0) * (step - s0) / (s1 - s0)
        return self.final
