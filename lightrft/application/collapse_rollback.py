"""What a run does when a training-health collapse signal starts (``train.on_collapse``).

The collapse signals are the checks registered with ``collapse=True`` whose reading counts as
one (reward drop; the early entropy collapse; truncation once it rose from below its
threshold; docs/health.md). At the onset of one, the configured action runs:

- ``warn``: nothing beyond the ``health.signal`` warning the cycle already logged;
- ``stop``: the run ends after this step (with a checkpoint when it has a store);
- ``rollback``: the policy (and critic) strategy state is restored to the best one so far
  and every later learning rate is scaled by ``rollback_lr_factor ** k`` after the k-th
  rollback, at most ``max_rollbacks`` times (later onsets only warn); the cycle then changes
  the sampling and loss settings ``train.collapse_rollback`` names (:mod:`rollback_changes`).

"Best" (``rollback`` only): with held-out evaluation, the state right after the evaluation
with the highest ``eval/accuracy`` (step 0, the initial policy, included); otherwise the
state that generated the rollouts with the highest training ``reward/mean``, taken just
before that step's update. It is a copy of the strategies' ``state_dict`` (weights, optimizer
state and schedule position) in host memory, about three to four times the trainable
weights' fp32 size per rank's shard, so ``rollback`` suits models whose optimizer state fits
in host memory twice; it is saved in the run's checkpoints so a resumed run rolls back alike.
The step counter, data order, KL controller and RNG streams are not rewound; with
``train.collapse_rollback.redo_steps`` the run takes the steps whose updates were undone again
(:attr:`CollapseGuard.redone_steps` more steps at the end).

``train.on_collapse_signals`` limits the action to the signals
it names; the others only warn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
import torch
from torch import Tensor

from lightrft.application.params import HealthParams
from lightrft.application.phases import Phase, PhaseSwitcher
from lightrft.domain.ports import Collective, Strategy
from lightrft.domain.registry import Registry
from lightrft.domain.training_health import HealthSignal

log = structlog.get_logger(__name__)

TRAINING_SCORE = "reward/mean"
EVAL_SCORE = "eval/accuracy"
HOST = torch.device("cpu")


@dataclass(frozen=True)
class CollapseOutcome:
    """What the action did: ``restored`` the best state (the engine must re-sync), or asks
    the run to ``stop``."""

    restored: bool = False
    stop: bool = False


@dataclass(frozen=True)
class CollapseAction:
    """A registered ``train.on_collapse`` choice: whether it needs the best state kept, and
    its response to the collapse signals that started at a step."""

    keeps_best: bool
    respond: Callable[[CollapseGuard, int, Sequence[HealthSignal]], CollapseOutcome]


COLLAPSE_ACTIONS: Registry[CollapseAction] = Registry("train.on_collapse action")


class CollapseGuard:
    """Keeps the best state (when the action needs it) and runs the action at collapse onsets.

    Every rank must make the same calls at the same points: scores are averaged over ranks
    before they are compared, so all ranks keep and restore the same step's state.
    """

    def __init__(
        self,
        params: HealthParams,
        strategies: Sequence[Strategy],
        collective: Collective,
        phases: PhaseSwitcher,
        *,
        by_eval: bool,
    ) -> None:
        self.params, self.action = params, COLLAPSE_ACTIONS.get(params.on_collapse)
        self.strategies, self.collective, self.phases = list(strategies), collective, phases
        self.by_eval = by_eval
        self.score_metric = EVAL_SCORE if by_eval else TRAINING_SCORE
        self.best_score: float | None = None
        self.best_step: int | None = None
        self.best_updates: int | None = None  # the updates the best state holds
        self.best_states: list[dict[str, Any]] | None = None
        self.rollbacks: list[dict[str, Any]] = []
        self.stopped_at: int | None = None

    def offer(self, step: int, metrics: Mapping[str, float], *, evaluated: bool) -> None:
        """Keeps the current state as the best if its score beats the best so far.

        Call it before each step's update with that step's rollout metrics
        (``evaluated=False``) and after each evaluation with its metrics (``evaluated=True``);
        only the kind this guard ranks by counts.
        """
        if not self.action.keeps_best or evaluated != (self.score_metric == EVAL_SCORE):
            return
        if self.score_metric not in metrics:
            return
        score = self._mean_over_ranks(float(metrics[self.score_metric]))
        if self.best_score is not None and not score > self.best_score:
            return
        with self.phases.phase(Phase.TRAIN):
            self.best_states = [_host_copy(s.state_dict()) for s in self.strategies]
        self.best_score, self.best_step = score, step
        # an evaluation follows its step's update, a step's rollouts precede it; the steps
        # earlier rollbacks undid hold no update
        self.best_updates = step - (not evaluated) - self.undone_steps
        log.debug("health.best_state", step=step, metric=self.score_metric, score=score)

    def respond(self, step: int, onsets: Sequence[HealthSignal]) -> CollapseOutcome:
        """Runs the action if a collapse signal is among the ``onsets`` of ``step``."""
        acted_on = self.params.on_collapse_signals
        collapses = [s for s in onsets if s.collapse and (acted_on is None or s.name in acted_on)]
        if not collapses:
            return CollapseOutcome()
        return self.action.respond(self, step, collapses)

    def restore_best(self, step: int, signals: Sequence[str]) -> CollapseOutcome:
        """Restores the best state and lowers the learning rate, if allowed and possible."""
        limit = self.params.max_rollbacks
        reason = None
        if len(self.rollbacks) >= limit:
            reason = f"train.max_rollbacks={limit} already done"
        elif self.best_states is None:
            reason = f"no best state yet (none ranked by {self.score_metric})"
        if reason is not None:
            self.warn("health.rollback_skipped", step=step, signals=list(signals), reason=reason)
            return CollapseOutcome()
        assert self.best_states is not None
        scale = self.params.rollback_lr_factor ** (len(self.rollbacks) + 1)
        with self.phases.phase(Phase.TRAIN):
            for strategy, state in zip(self.strategies, self.best_states, strict=True):
                strategy.load_state_dict(_host_copy(state))  # the kept copy stays untouched
                strategy.set_lr_scale(scale)
        assert self.best_updates is not None
        event = {
            "step": step,
            "restored_step": self.best_step,
            "undone_steps": step - self.undone_steps - self.best_updates,
            "lr_scale": scale,
            "signals": list(signals),
        }
        self.rollbacks.append(event)
        self.warn("health.rollback", **event, ranked_by=self.score_metric)
        return CollapseOutcome(restored=True)

    @property
    def undone_steps(self) -> int:
        """Steps whose updates the rollbacks so far undid (the current weights hold the
        updates of the other steps)."""
        return sum(int(event.get("undone_steps", 0)) for event in self.rollbacks)

    @property
    def redone_steps(self) -> int:
        """Steps the run adds at its end to take again those the rollbacks undid (with
        ``redo_steps``; else 0)."""
        return self.undone_steps if self.params.rollback.redo_steps else 0

    def note_settings(self, settings: Mapping[str, float]) -> None:
        """Records on the latest rollback the settings it changed (``train.collapse_rollback``;
        kept in the summary and the checkpoints)."""
        if self.rollbacks and settings:
            self.rollbacks[-1]["settings"] = dict(settings)

    def metrics(self) -> dict[str, float]:
        """``health/rollbacks`` (the count so far) when the action rolls back, else nothing."""
        return {"health/rollbacks": float(len(self.rollbacks))} if self.action.keeps_best else {}

    def summary(self) -> dict[str, Any]:
        """The action, the rollbacks done and the step the run stopped at (if it did)."""
        return {
            "on_collapse": self.params.on_collapse,
            "rollbacks": [dict(event) for event in self.rollbacks],
            "stopped_at": self.stopped_at,
        }

    def state_dict(self) -> dict[str, Any]:
        """Best score, step and state, rollbacks and stop step (host tensors, plain values)."""
        return {
            "best_score": self.best_score,
            "best_step": self.best_step,
            "best_updates": self.best_updates,
            "best_states": self.best_states,
            "rollbacks": [dict(event) for event in self.rollbacks],
            "stopped_at": self.stopped_at,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict`."""
        self.best_score = state["best_score"]
        self.best_step = state["best_step"]
        # absent from checkpoints of before 2026-11-29: then exact for a best state offered
        # before any rollback
        fallback = None if self.best_step is None else self.best_step - (not self.by_eval)
        self.best_updates = state.get("best_updates", fallback)
        self.best_states = state["best_states"]
        self.rollbacks = [dict(event) for event in state["rollbacks"]]
        self.stopped_at = state["stopped_at"]

    def warn(self, event: str, **fields: Any) -> None:
        """Logs a warning once, from rank 0 (every rank takes the same decisions)."""
        if self.collective.rank == 0:
            log.warning(event, **fields)

    def _mean_over_ranks(self, value: float) -> float:
        if self.collective.world_size == 1:
            return value
        total = self.collective.all_reduce_sum(torch.tensor([value], dtype=torch.float64))
        return float(total[0]) / self.collective.world_size


def _host_copy(tree: Any) -> Any:
    """``tree`` with every tensor copied to host memory (dicts, lists, tuples walked)."""
    if isinstance(tree, Tensor):
        return tree.detach().to(HOST, copy=True)
    if isinstance(tree, Mapping):
        return {key: _host_copy(value) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_host_copy(value) for value in tree)
    return tree


def _warn(guard: CollapseGuard, step: int, signals: Sequence[HealthSignal]) -> CollapseOutcome:
    return CollapseOutcome()  # the cycle already warned


def _stop(guard: CollapseGuard, step: int, signals: Sequence[HealthSignal]) -> CollapseOutcome:
    guard.stopped_at = step
    guard.warn(
        "health.stop",
        step=step,
        signals=[s.name for s in signals],
        hint="train.on_collapse=stop ends the run at a collapse signal; see docs/health.md",
    )
    return CollapseOutcome(stop=True)


def _rollback(guard: CollapseGuard, step: int, signals: Sequence[HealthSignal]) -> CollapseOutcome:
    return guard.restore_best(step, [s.name for s in signals])


COLLAPSE_ACTIONS.add("warn", CollapseAction(keeps_best=False, respond=_warn))
COLLAPSE_ACTIONS.add("stop", CollapseAction(keeps_best=False, respond=_stop))
COLLAPSE_ACTIONS.add("rollback", CollapseAction(keeps_best=True, respond=_rollback))
