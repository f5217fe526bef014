"""Colocation: which component is awake in which phase, and what each phase cost.

Every rank runs every role on the same devices, one phase after another. Entering a phase
puts to sleep the components the plan does not need and wakes those it needs; leaving it
records wall time and device memory, so the cost of every switch shows in the metrics.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import structlog

from lightrft.domain.ports import Accelerator

log = structlog.get_logger(__name__)

COMPONENTS = frozenset({"engine", "policy", "critic", "reference", "teachers", "reward_models"})


class Phase:
    """The phase names: the cycle, the experience maker, the evaluator and the plans use
    these constants (and metrics are named ``time/<phase>_s``)."""

    ROLLOUT = "rollout"
    REWARD = "reward"
    REFERENCE = "reference"
    TRAIN = "train"
    WEIGHT_SYNC = "weight_sync"
    EVAL = "eval"
    EVAL_REWARD = "eval_reward"


DEFAULT_PLAN: Mapping[str, frozenset[str]] = {
    Phase.ROLLOUT: frozenset({"engine"}),
    Phase.REWARD: frozenset({"reward_models"}),
    Phase.REFERENCE: frozenset({"policy", "reference", "teachers", "critic"}),
    Phase.TRAIN: frozenset({"policy", "critic"}),
    Phase.WEIGHT_SYNC: frozenset({"engine", "policy"}),
    Phase.EVAL: frozenset({"engine"}),
    Phase.EVAL_REWARD: frozenset({"reward_models"}),
}
"""Components awake per phase; everything else is asleep (offloaded)."""


def engine_on_policy_plan(
    plan: Mapping[str, frozenset[str]] = DEFAULT_PLAN,
) -> dict[str, frozenset[str]]:
    """``plan`` for an engine that runs the policy's own weights (no copy of them).

    Wherever the engine is awake the policy must be too: offloading the policy would take
    the engine's weights off the device.
    """
    return {
        phase: names | {"policy"} if "engine" in names else names for phase, names in plan.items()
    }


@dataclass(frozen=True)
class Switch:
    """How to wake (``on``) and put to sleep (``off``) one component."""

    on: Callable[[], None]
    off: Callable[[], None]


@dataclass
class PhaseSwitcher:
    """Moves components between awake and asleep at phase boundaries and measures phases.

    All components start awake (they are loaded on the device when built); the first phase
    puts the unneeded ones to sleep.
    """

    switches: Mapping[str, Switch]
    plan: Mapping[str, frozenset[str]] = field(default_factory=lambda: dict(DEFAULT_PLAN))
    accelerator: Accelerator | None = None
    clock: Callable[[], float] = time.perf_counter
    _awake: dict[str, bool] = field(init=False)
    _metrics: dict[str, float] = field(init=False, default_factory=dict)
    current: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        named = {c for names in self.plan.values() for c in names} | set(self.switches)
        unknown = named - COMPONENTS
        if unknown:
            raise ValueError(f"unknown components {sorted(unknown)}; valid: {sorted(COMPONENTS)}")
        self._awake = {name: True for name in self.switches}

    def is_awake(self, component: str) -> bool:
        """Whether ``component`` is awake now (unknown components are never awake)."""
        return self._awake.get(component, False)

    def _switch_to(self, phase: str) -> None:
        if phase not in self.plan:
            raise ValueError(f"unknown phase {phase!r}; plan has {sorted(self.plan)}")
        wanted = self.plan[phase]
        for name, switch in self.switches.items():  # sleep first, so wake-ups find room
            if self._awake[name] and name not in wanted:
                switch.off()
                self._awake[name] = False
        for name, switch in self.switches.items():
            if not self._awake[name] and name in wanted:
                switch.on()
                self._awake[name] = True

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Runs the body with the plan of phase ``name`` in force; records time and memory."""
        if self.current is not None:
            raise RuntimeError(f"phase {name!r} entered inside phase {self.current!r}")
        start = self.clock()
        self._switch_to(name)
        self.current = name
        log.debug(
            "phase.switch", phase=name, awake=sorted(n for n, on in self._awake.items() if on)
        )
        try:
            yield
        finally:
            self.current = None
            if self.accelerator is not None:
                self.accelerator.synchronize()
            elapsed = self.clock() - start
            key = f"time/{name}_s"
            self._metrics[key] = self._metrics.get(key, 0.0) + elapsed
            if self.accelerator is not None:
                stats = self.accelerator.memory_stats()
                gib = float(2**30)
                self._metrics[f"memory/{name}_allocated_gib"] = stats.allocated / gib
                peak_key = f"memory/{name}_peak_gib"
                self._metrics[peak_key] = max(
                    self._metrics.get(peak_key, 0.0), stats.peak_allocated / gib
                )

    def rest(self) -> None:
        """Puts every component to sleep (the run is over or paused)."""
        for name, switch in self.switches.items():
            if self._awake[name]:
                switch.off()
                self._awake[name] = False

    def take_metrics(self) -> dict[str, float]:
        """The metrics recorded since the last call, then forgets them."""
        metrics, self._metrics = self._metrics, {}
        return metrics
