"""The RL cycle's run state and its checkpoints: what, besides model and optimizer state,
a resumed run needs (:class:`CycleState`), its serialisation (reading the formats of older
versions too), and saving and resuming through a :class:`CheckpointStore`.

A checkpoint holds the step, the KL controller (its type and fields), the reward moments,
the constraint multipliers, the policy version, the strategies' state (weights, optimizer,
schedule), the torch RNG, the health monitor's state and, off-policy, the versions of the
batches generated ahead (not saved: a resumed run drops and regenerates them). Checkpoints
of older versions lack ``constraints`` (no constraints then) and ``health``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import structlog
import torch

from lightrft.application.checkpoint_resume import load_newest_intact
from lightrft.application.constraint_step import ConstraintState
from lightrft.application.health_watch import HealthWatch
from lightrft.application.params import AlgorithmParams, RewardShapingParams
from lightrft.application.rollout_feed import RolloutFeed
from lightrft.domain.kl import KLController, make_kl_controller
from lightrft.domain.ports import CheckpointStore, Collective, Strategy
from lightrft.domain.rewards import RunningMoments

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class CycleState:
    """What besides model/optimizer state a resumed run needs."""

    step: int
    kl: KLController
    reward_moments: RunningMoments
    constraints: ConstraintState = field(default_factory=ConstraintState)  # the multipliers

    @classmethod
    def initial(cls, algorithm: AlgorithmParams, shaping: RewardShapingParams) -> CycleState:
        """Step 0: the configured KL controller, empty moments, initial multipliers."""
        return cls(
            step=0,
            kl=_kl_controller(algorithm),
            reward_moments=RunningMoments(),
            constraints=ConstraintState.initial(shaping.constraints),
        )


@dataclass(frozen=True)
class Restored:
    """A loaded checkpoint: the run state, the policy version and how many batches
    generated ahead it dropped."""

    state: CycleState
    policy_version: int
    dropped_batches: int


class CycleCheckpoints:
    """Serialises and restores the run state of a cycle over its strategies, health monitor
    and rollout feed; saves and resumes through ``store`` (None: no checkpoints)."""

    def __init__(
        self,
        store: CheckpointStore | None,
        collective: Collective,
        strategies: tuple[Strategy, Strategy | None],
        health: HealthWatch,
        feed: RolloutFeed,
        algorithm: AlgorithmParams,
        shaping: RewardShapingParams,
        *,
        asynchronous: bool,
    ) -> None:
        """``strategies``: the policy's and the critic's (None without a critic);
        ``asynchronous``: off-policy (batches may be in flight)."""
        self.store, self.collective = store, collective
        self.policy_strategy, self.critic_strategy = strategies
        self.health, self.feed = health, feed
        self.algorithm, self.shaping, self.asynchronous = algorithm, shaping, asynchronous

    def state_dict(self, state: CycleState, policy_version: int) -> dict[str, Any]:
        """Everything needed to continue bitwise identically."""
        saved: dict[str, Any] = {
            "step": state.step,
            "kl": {"type": type(state.kl).__name__, **asdict(state.kl)},  # type: ignore[call-overload]
            "reward_moments": asdict(state.reward_moments),
            "constraints": state.constraints.to_dict(self.shaping.constraints),
            "policy_version": policy_version,
            "policy_strategy": self.policy_strategy.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "health": self.health.state_dict(),
        }
        if self.critic_strategy is not None:
            saved["critic_strategy"] = self.critic_strategy.state_dict()
        if self.asynchronous:
            # batches generated ahead are not saved: a resumed run drops and regenerates them
            saved["async_in_flight"] = [list(x) for x in self.feed.in_flight()]
        return saved

    def load_state_dict(self, saved: Mapping[str, Any]) -> Restored:
        """Restores strategies, RNG, health and the feed from :meth:`state_dict` (or an
        older version's); returns the run state."""
        kl = dict(saved["kl"])
        kind = kl.pop("type")
        a = self.algorithm
        controller = _kl_controller(a)
        if type(controller).__name__ != kind:
            raise ValueError(
                f"checkpoint has a {kind} KL controller, config asks for {a.kl_controller}"
            )
        state = CycleState(
            step=int(saved["step"]),
            kl=type(controller)(**kl),
            reward_moments=RunningMoments(**saved["reward_moments"]),
            # absent from checkpoints of older versions (which had no constraints)
            constraints=ConstraintState.from_dict(
                saved.get("constraints", {}), self.shaping.constraints
            ),
        )
        policy_version = int(saved["policy_version"])
        self.policy_strategy.load_state_dict(saved["policy_strategy"])
        if self.critic_strategy is not None:
            self.critic_strategy.load_state_dict(saved["critic_strategy"])
        torch.set_rng_state(saved["torch_rng"])
        if "health" in saved:  # absent from checkpoints of older versions
            self.health.load_state_dict(saved["health"])
        self.feed.restart(state.step)
        dropped = len(saved.get("async_in_flight", ()))
        if dropped:
            log.warning(
                "async.dropped_on_resume",
                step=state.step,
                batches=dropped,
                versions=[v for _, v in saved["async_in_flight"]],
            )
        return Restored(state, policy_version, dropped)

    def save(self, step: int, saved: dict[str, Any]) -> None:
        """Saves ``saved`` as ``step`` (atomic, through the store)."""
        if self.store is None:
            raise ValueError("no CheckpointStore was given")
        self.store.save(step, saved)
        log.info("checkpoint.saved", step=step)

    def newest(self) -> tuple[int, dict[str, Any]] | None:
        """The newest checkpoint intact on every rank (damaged ones are logged and skipped,
        see :mod:`checkpoint_resume`); None without a store or a checkpoint."""
        if self.store is None:
            return None
        return load_newest_intact(self.store, self.collective)


def _kl_controller(a: AlgorithmParams) -> KLController:
    return make_kl_controller(a.kl_controller, a.kl_coef, a.kl_target, a.kl_horizon)
