"""The training-health checks: one per way an RL run goes wrong, each over one logged metric.

A check reads one scalar the cycle logs every step (the first of its ``sources`` present),
plus the ``context`` metrics of the same step a check judges together with it, and turns them
into a ``health/*`` value; it *fires* when that value crosses its threshold (docs/health.md
lists them with what to do). Checks are registered by signal name in
:data:`HEALTH_CHECKS`; :class:`~lightrft.domain.training_health.HealthMonitor` runs them all.

Plain Python floats throughout: a check sees a handful of logged numbers per step, never
tensors. Every detector's state is a dict of floats and lists of floats, so it checkpoints
with the run (``torch.load(weights_only=True)`` reads it).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from lightrft.domain.registry import Registry
from lightrft.domain.sampled_entropy import SAMPLED_NLL

NO_CONTEXT: Mapping[str, float] = MappingProxyType({})
"""The context of a check that reads one metric only."""

ENTROPY = "train/entropy"
TRAINING_REWARD = "reward/mean"
ALIKE_GROUPS = "reward/alike_groups_fraction"
"""The fraction of groups (of 2+ samples) whose rewards are all equal, whatever the estimator."""
ZERO_ADVANTAGE_GROUPS = "advantages/zero_groups_fraction"


def _in_unit(name: str, value: float) -> None:
    if not 0.0 < value <= 1.0:
        raise ValueError(f"{name} must be in (0, 1], got {value}")


def _at_least(name: str, value: float, low: float) -> None:
    if not value >= low:
        raise ValueError(f"{name} must be >= {low}, got {value}")


@dataclass(frozen=True)
class HealthThresholds:
    """When each check fires (docs/health.md explains each one).

    ``reward_drop``: the ``reward_window``-step running mean of ``reward/mean`` is more than
    this below the best such mean so far (absolute, in reward units). ``entropy_ratio`` /
    ``entropy_floor``: ``train/entropy`` is below this fraction of its mean over the first
    ``baseline_steps`` steps, or below this many nats. ``truncated_fraction``: at least this
    fraction of responses hit the token budget. ``kl``: mean per-token KL to the reference
    (``kl/mean``, else ``train/kl``) at least this (nats). ``grad_norm_ratio``: the gradient
    norm is at least this multiple of the median of the last ``grad_norm_window`` non-zero
    norms (checked once ``baseline_steps`` are known). ``zero_adv_groups``: at least this
    fraction of groups have all-zero advantages. ``logprob_drift``: the rollout engine's
    log-probs differ from the trainer's by at least this k3 KL (``rollout/kl_k3``).

    ``early_collapse_*`` (the early entropy collapse: the policy stopped exploring before it
    learned the task): a step *matches* when ``train/entropy`` is below
    ``early_collapse_entropy`` nats, the training ``reward/mean`` below
    ``early_collapse_reward`` (reward units) and at least ``early_collapse_alike`` of the groups
    score alike (``reward/alike_groups_fraction``: all its samples rewarded the same); the check fires when at least
    ``early_collapse_steps`` of the last ``early_collapse_window`` judged steps match.
    """

    reward_window: int = 3
    reward_drop: float = 0.25
    baseline_steps: int = 3
    entropy_ratio: float = 0.1
    entropy_floor: float = 0.05
    truncated_fraction: float = 0.9
    kl: float = 0.5
    grad_norm_ratio: float = 10.0
    grad_norm_window: int = 100
    zero_adv_groups: float = 0.9
    logprob_drift: float = 0.02
    early_collapse_entropy: float = 0.3
    early_collapse_reward: float = 0.6
    early_collapse_alike: float = 0.85
    early_collapse_steps: int = 2
    early_collapse_window: int = 3

    def __post_init__(self) -> None:
        for name in ("reward_window", "baseline_steps", "grad_norm_window"):
            _at_least(name, getattr(self, name), 1)
        for name in ("entropy_ratio", "truncated_fraction", "zero_adv_groups"):
            _in_unit(name, getattr(self, name))
        _in_unit("early_collapse_alike", self.early_collapse_alike)
        _at_least("early_collapse_entropy", self.early_collapse_entropy, 0.0)
        _at_least("early_collapse_steps", self.early_collapse_steps, 1)
        _at_least("early_collapse_window", self.early_collapse_window, self.early_collapse_steps)
        for name in ("reward_drop", "kl", "logprob_drift"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        _at_least("entropy_floor", self.entropy_floor, 0.0)
        _at_least("grad_norm_ratio", self.grad_norm_ratio, 1.0)


@dataclass(frozen=True)
class Reading:
    """One step's verdict of a check: its ``health/*`` value, the threshold it is held to,
    whether it fired, and a one-line ``detail`` saying what was seen."""

    value: float
    threshold: float
    fired: bool
    detail: str
    collapse: bool = True  # False: fired, but not a collapse even for a collapse check


class Detector(Protocol):
    """A check's running state: one metric value per step in (with the check's ``context``
    metrics of the same step), a reading out (``None`` while it has not seen enough steps to
    judge)."""

    def observe(self, value: float, context: Mapping[str, float] = NO_CONTEXT) -> Reading | None:
        """Takes this step's value of the watched metric."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """The state, as floats and lists of floats."""
        ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict`."""
        ...


@dataclass(frozen=True)
class HealthCheck:
    """A registered check: the metrics it reads (the first present is used), the
    ``health/*`` metric it logs, whether it signals a collapse (``train.on_collapse`` acts
    on those), how to build its detector from the thresholds, and the ``context`` metrics
    it also needs at the same step (a step without one of them is not judged), and the
    ``extra`` metrics it reads when a step has them."""

    sources: tuple[str, ...]
    metric: str
    collapse: bool
    make: Callable[[HealthThresholds], Detector]
    context: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()


HEALTH_CHECKS: Registry[HealthCheck] = Registry("health check")


def collapse_signals() -> tuple[str, ...]:
    """The names of the registered checks that signal a collapse (``train.on_collapse``)."""
    return tuple(name for name in HEALTH_CHECKS.names() if HEALTH_CHECKS.get(name).collapse)


class Limit:
    """Stateless: fires when the value is at least ``threshold`` (or not finite)."""

    def __init__(self, threshold: float, what: str) -> None:
        self.threshold, self.what = threshold, what

    def observe(self, value: float, context: Mapping[str, float] = NO_CONTEXT) -> Reading | None:
        return self.read(value)

    def read(self, value: float) -> Reading:
        """The reading for ``value`` (a limit needs no history)."""
        fired = not math.isfinite(value) or value >= self.threshold
        relation = ">=" if fired else "<"
        detail = f"{self.what} is {value:.4g} ({relation} {self.threshold:.4g})"
        return Reading(value, self.threshold, fired, detail)

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        pass


class RisingLimit:
    """Like :class:`Limit`, but a firing counts as a collapse only once the value has been
    below ``threshold`` at an earlier step: a policy that hit the limit from its first step
    (a base model that never finishes within the token budget) is warned about, not rolled
    back or stopped, since there is no healthier state to return to."""

    def __init__(self, threshold: float, what: str) -> None:
        self.limit = Limit(threshold, what)
        self.was_below = False

    def observe(self, value: float, context: Mapping[str, float] = NO_CONTEXT) -> Reading | None:
        reading = self.limit.read(value)
        if not reading.fired:
            self.was_below = True
            return reading
        if self.was_below:
            return reading
        detail = f"{reading.detail}, as from the first step (a warning, not a collapse)"
        return Reading(reading.value, reading.threshold, True, detail, collapse=False)

    def state_dict(self) -> dict[str, Any]:
        return {"was_below": float(self.was_below)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.was_below = bool(state["was_below"])


class RewardDrop:
    """The running mean over ``window`` steps vs the best running mean so far; the value is
    best - current (>= 0), firing when above ``limit``. Non-finite rewards are ignored."""

    def __init__(self, window: int, limit: float) -> None:
        self.window, self.limit = window, limit
        self.recent: list[float] = []
        self.best: float | None = None

    def observe(self, value: float, context: Mapping[str, float] = NO_CONTEXT) -> Reading | None:
        if not math.isfinite(value):
            return None
        self.recent = [*self.recent, value][-self.window :]
        if len(self.recent) < self.window:
            return None
        mean = sum(self.recent) / self.window
        self.best = mean if self.best is None else max(self.best, mean)
        drop = self.best - mean
        detail = (
            f"the {self.window}-step mean of reward/mean is {mean:.4g}, {drop:.4g} below its "
            f"best {self.best:.4g} (limit {self.limit:.4g})"
        )
        return Reading(drop, self.limit, drop > self.limit, detail)

    def state_dict(self) -> dict[str, Any]:
        return {"recent": list(self.recent), "best": self.best}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.recent = [float(v) for v in state["recent"]]
        self.best = None if state["best"] is None else float(state["best"])


class EntropyCollapse:
    """The first ``baseline_steps`` values set a baseline (their mean); later values give the
    ratio value / baseline, firing below ``ratio`` or when the value is below ``floor`` nats."""

    def __init__(self, baseline_steps: int, ratio: float, floor: float) -> None:
        self.baseline_steps, self.ratio, self.floor = baseline_steps, ratio, floor
        self.baseline: list[float] = []

    def observe(self, value: float, context: Mapping[str, float] = NO_CONTEXT) -> Reading | None:
        if len(self.baseline) < self.baseline_steps:
            if math.isfinite(value):
                self.baseline.append(value)
            return None
        base = sum(self.baseline) / len(self.baseline)
        ratio = value / base if base > 0 else 1.0
        fired = not math.isfinite(value) or ratio < self.ratio or value < self.floor
        detail = (
            f"train/entropy is {value:.4g} nats, {ratio:.3g} of its first-steps mean "
            f"{base:.4g} (fires below {self.ratio:.3g} of it or below {self.floor:.4g} nats)"
        )
        return Reading(ratio, self.ratio, fired, detail)

    def state_dict(self) -> dict[str, Any]:
        return {"baseline": list(self.baseline)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.baseline = [float(v) for v in state["baseline"]]


class EarlyEntropyCollapse:
    """The early entropy collapse: entropy gone while the reward is still low and most groups
    score alike, so GRPO has (almost) nothing left to learn from. A step matches when all
    three hold (entropy below ``entropy`` nats, reward below ``reward``, at least ``alike`` of
    the groups with all-zero advantages); the value is the number of matching steps among
    the last ``window`` judged ones, firing at ``steps`` or more: one noisy step does not
    fire, one step that misses in a lasting collapse does not silence it. A converging policy
    (entropy falling late, at a high reward) does not match; neither does the start of a run
    that earns nothing yet (its entropy is the base model's)."""

    def __init__(self, entropy: float, reward: float, alike: float, steps: int, window: int):
        self.entropy, self.reward, self.alike = entropy, reward, alike
        self.steps, self.window = steps, window
        self.recent: list[float] = []  # 1.0 for a matching step, else 0.0

    def observe(self, value: float, context: Mapping[str, float] = NO_CONTEXT) -> Reading | None:
        if TRAINING_REWARD not in context or ALIKE_GROUPS not in context:
            return None  # not judged without them
        reward, alike = context[TRAINING_REWARD], context[ALIKE_GROUPS]
        # the trained rows' entropy is that of the groups that differed, the few left when
        # most score alike; the rollout's estimate covers every sample: the lower one counts
        value = min(value, context.get(SAMPLED_NLL, value))
        matches = value < self.entropy and reward < self.reward and alike >= self.alike
        self.recent = [*self.recent, float(matches)][-self.window :]
        count = sum(self.recent)
        detail = (
            f"entropy {value:.3g} nats (the lower of train/entropy and {SAMPLED_NLL}; "
            f"collapse below {self.entropy:.3g}) with "
            f"reward/mean {reward:.3g} (below {self.reward:.3g}) and {alike:.0%} of groups "
            f"alike (from {self.alike:.0%}): {count:.0f} of the last {len(self.recent)} steps "
            f"so (fires at {self.steps})"
        )
        return Reading(count, float(self.steps), count >= self.steps, detail)

    def state_dict(self) -> dict[str, Any]:
        return {"recent": list(self.recent)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.recent = [float(v) for v in state["recent"]]


class GradNormBlowup:
    """The gradient norm over the median of the last ``window`` finite non-zero norms
    (steps without gradient, e.g. all groups uninformative, do not set the scale); judged
    once ``min_history`` such norms are known. A non-finite norm fires with ratio inf."""

    def __init__(self, min_history: int, window: int, ratio: float) -> None:
        self.min_history, self.window, self.ratio = min_history, window, ratio
        self.history: list[float] = []

    def observe(self, value: float, context: Mapping[str, float] = NO_CONTEXT) -> Reading | None:
        reading = None
        if len(self.history) >= self.min_history:
            median = statistics.median(self.history)
            ratio = value / median if math.isfinite(value) else math.inf
            detail = (
                f"train/grad_norm is {value:.4g}, {ratio:.3g}x the median {median:.4g} of the "
                f"last {len(self.history)} steps (limit {self.ratio:.3g}x)"
            )
            reading = Reading(ratio, self.ratio, ratio >= self.ratio, detail)
        if math.isfinite(value) and value > 0:
            self.history = [*self.history, value][-self.window :]
        return reading

    def state_dict(self) -> dict[str, Any]:
        return {"history": list(self.history)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.history = [float(v) for v in state["history"]]


HEALTH_CHECKS.add(
    "reward_drop",
    HealthCheck(
        (TRAINING_REWARD,),
        "health/reward_drop",
        True,
        lambda t: RewardDrop(t.reward_window, t.reward_drop),
    ),
)
HEALTH_CHECKS.add(
    "entropy_collapse",
    HealthCheck(
        (ENTROPY,),
        "health/entropy_ratio",
        # a warning only: entropy also falls this far when a policy converges on a task it
        # solves (docs/health.md); the collapse that harms shows as early_entropy_collapse
        # (entropy gone at a low reward) or reward_drop, which act
        False,
        lambda t: EntropyCollapse(t.baseline_steps, t.entropy_ratio, t.entropy_floor),
    ),
)
HEALTH_CHECKS.add(
    "truncation",
    HealthCheck(
        ("response_length/truncated_fraction",),
        "health/truncated_fraction",
        True,
        lambda t: RisingLimit(
            t.truncated_fraction, "the fraction of responses cut at the token budget"
        ),
    ),
)
HEALTH_CHECKS.add(
    "kl_blowup",
    HealthCheck(
        ("kl/mean", "train/kl"),
        "health/kl",
        False,
        lambda t: Limit(t.kl, "the mean per-token KL to the reference policy"),
    ),
)
HEALTH_CHECKS.add(
    "grad_norm_blowup",
    HealthCheck(
        ("train/grad_norm",),
        "health/grad_norm_ratio",
        False,
        lambda t: GradNormBlowup(t.baseline_steps, t.grad_norm_window, t.grad_norm_ratio),
    ),
)
HEALTH_CHECKS.add(
    "zero_advantage_groups",
    HealthCheck(
        (ZERO_ADVANTAGE_GROUPS,),
        "health/zero_adv_groups",
        False,
        lambda t: Limit(t.zero_adv_groups, "the fraction of groups with all-zero advantages"),
    ),
)
HEALTH_CHECKS.add(
    "logprob_drift",
    HealthCheck(
        ("rollout/kl_k3",),
        "health/logprob_drift",
        False,
        lambda t: Limit(t.logprob_drift, "the rollout-vs-trainer log-prob KL (rollout/kl_k3)"),
    ),
)
HEALTH_CHECKS.add(
    "early_entropy_collapse",
    HealthCheck(
        # a step that trained no row (every group alike) has no train/entropy: the rollout's
        # own estimate stands in, so a policy settled on one answer is judged too; on a step
        # that has both, the lower counts (extra below)
        (ENTROPY, SAMPLED_NLL),
        "health/early_entropy_collapse",
        True,
        lambda t: EarlyEntropyCollapse(
            t.early_collapse_entropy,
            t.early_collapse_reward,
            t.early_collapse_alike,
            t.early_collapse_steps,
            t.early_collapse_window,
        ),
        context=(TRAINING_REWARD, ALIKE_GROUPS),
        extra=(SAMPLED_NLL,),
    ),
)
