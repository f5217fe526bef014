"""RLCycle: the RL loop, with the rollout engine beside the trainer (colocated, phases
switching the devices between them) or elsewhere (the split placement's feed).

One step (:meth:`RLCycle.train_step`), each part in its own module: the batch from the feed
(:mod:`rollout_feed`; colocated: weight sync if the policy changed, then the experience
maker's collection stages, generate and score), the experience maker's annotation stages
(:mod:`experience_maker`, :mod:`lightrft.application.stages`: shaping, the no-grad forwards,
advantages), the reward-failure and health checks, the update (:mod:`policy_update`), the KL
controller, the step's metrics (:mod:`step_metrics`) and its logged samples
(:mod:`sample_rows`). The loop around it evaluates, checkpoints (:mod:`cycle_checkpoint`) and
stops. Phase switches follow a colocation plan (:mod:`lightrft.application.phases`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import structlog
import torch

from lightrft.application.collapse_rollback import CollapseGuard
from lightrft.application.cycle_checkpoint import CycleCheckpoints, CycleState
from lightrft.application.cycle_settings import CycleSettings as CycleSettings
from lightrft.application.evaluator import Evaluator
from lightrft.application.experience_maker import CollectedRollout, ExperienceMaker
from lightrft.application.health_watch import HealthWatch
from lightrft.application.phases import DEFAULT_PLAN, Phase, PhaseSwitcher, Switch
from lightrft.application.policy_optimizer import PolicyOptimizer
from lightrft.application.policy_update import UpdatePolicy
from lightrft.application.reward_failures import (
    RewardFailureMonitor,
    RewardSourceFailingError,
)
from lightrft.application.rollback_changes import (
    READINGS_PREFIX,
    readings,
    refuse_on_split_placement,
    settings_after,
)
from lightrft.application.rollout_feed import InlineRolloutFeed, RolloutFeed
from lightrft.application.rollout_queue import Tagged
from lightrft.application.sample_rows import SampleLog
from lightrft.application.step_metrics import StepMetrics
from lightrft.application.step_prompts import StepPrompts
from lightrft.application.weight_sync import sync_engine_weights
from lightrft.domain.async_errors import DeadlineExceededError, ProducerDiedError
from lightrft.domain.checkpoint_fit import CheckpointShapeError
from lightrft.domain.ports import (
    Accelerator,
    CheckpointStore,
    Collective,
    Critic,
    Policy,
    PromptSource,
    ReferenceModel,
    RewardSource,
    RolloutEngine,
    Strategy,
    Tracker,
)
from lightrft.domain.types import PromptRecord

log = structlog.get_logger(__name__)
_T = TypeVar("_T")


@dataclass(frozen=True)
class CycleComponents:
    """The ports the cycle drives. Strategies must already be ``prepare``d."""

    prompts: PromptSource
    engine: RolloutEngine
    policy: Policy
    policy_strategy: Strategy
    reward_sources: Sequence[RewardSource]
    collective: Collective
    tracker: Tracker
    checkpoints: CheckpointStore | None = None
    reference: ReferenceModel | None = None
    critic: Critic | None = None
    critic_strategy: Strategy | None = None
    accelerator: Accelerator | None = None
    eval_prompts: PromptSource | None = None
    teachers: Sequence[ReferenceModel] = ()  # on-policy distillation (awake with the reference)


def experience_maker(
    c: CycleComponents,
    s: CycleSettings,
    phases: PhaseSwitcher,
    *,
    engine: RolloutEngine | None = None,
    recompute_old_logprobs: bool = True,
) -> ExperienceMaker:
    """The experience maker over ``c``'s ports and ``s``'s parameters (``engine`` instead of
    ``c.engine`` where given: the split placement's producer engine)."""
    return ExperienceMaker(
        engine=c.engine if engine is None else engine,
        policy=c.policy,
        reward_sources=c.reward_sources,
        collective=c.collective,
        phases=phases,
        rollout=s.rollout,
        algorithm=s.algorithm,
        shaping=s.shaping,
        reference=c.reference,
        critic=c.critic,
        teachers=c.teachers,
        recompute_old_logprobs=recompute_old_logprobs,
        skip_zero_advantage_rows=s.train.skip_zero_advantage_rows,
    )


class RLCycle:
    """Runs RL steps over the ports; resumable from a :class:`CheckpointStore`."""

    def __init__(
        self,
        components: CycleComponents,
        settings: CycleSettings,
        plan: Mapping[str, frozenset[str]] = DEFAULT_PLAN,
        feed: Callable[[RLCycle], RolloutFeed] | None = None,
    ) -> None:
        """``feed`` builds where rollouts come from (default: the colocated
        :class:`InlineRolloutFeed` with ``settings.off_policy.max_staleness``; the split
        placement passes a producer's feed, see ``application/rollout_producer.py``)."""
        c, s = components, settings
        self.components, self._settings = c, s
        self._configured = s  # before the rollbacks' changes (train.collapse_rollback)
        if feed is not None and s.health.on_collapse == "rollback":
            refuse_on_split_placement(s.health.rollback)
        self.phases = PhaseSwitcher(_switches(c), plan, c.accelerator)
        self.maker = experience_maker(
            c,
            s,
            self.phases,
            # one epoch, one optimizer step per batch: the old policy is the current one
            recompute_old_logprobs=not (s.train.epochs == 1 and s.train.mini_batch_size is None),
        )
        self.optimizer = PolicyOptimizer(
            policy=c.policy,
            strategy=c.policy_strategy,
            collective=c.collective,
            algorithm=s.algorithm,
            train=s.train,
            critic=c.critic,
            critic_strategy=c.critic_strategy,
        )
        self.evaluator = Evaluator(
            c.engine,
            c.reward_sources,
            dict(s.shaping.weights),
            recipes=s.shaping.recipes,
            accuracy_sources=s.cycle.eval_accuracy_sources,
        )
        self.reward_failures = RewardFailureMonitor(
            s.reward_failures, [source.name for source in c.reward_sources], c.collective
        )
        self.stopped_early = False  # run() ended because should_stop() said so
        strategies = [x for x in (c.policy_strategy, c.critic_strategy) if x is not None]
        self.health = HealthWatch(
            CollapseGuard(
                s.health,
                strategies,
                c.collective,
                self.phases,
                by_eval=self._evaluating and s.health.rollback_rank_by == "auto",
            )
        )
        self.state = CycleState.initial(s.algorithm, s.shaping)
        self.policy_version = 0
        self.engine_version: int | None = None  # unknown: sync before the first rollout
        self.history: list[dict[str, float]] = []
        self.feed: RolloutFeed = (
            feed(self)
            if feed is not None
            else InlineRolloutFeed(
                self.produce_rollout, s.off_policy.max_staleness, s.cycle.total_steps - 1
            )
        )
        if feed is None and s.off_policy.max_staleness > 0:
            log.info(
                "rollout.colocated_off_policy",
                max_staleness=s.off_policy.max_staleness,
                note="generation and training take turns on the same devices, so batches "
                "generated ahead overlap nothing and only add staleness; "
                "rollout.placement=split runs the engine beside the trainer",
            )
        self._assemble_step_parts(dropped_on_resume=0)

    @property
    def settings(self) -> CycleSettings:
        """The cycle's parameters; setting them assembles the step's parts that read them
        (prompt schedule, update, sample log, metrics, checkpoints) again."""
        return self._settings

    @settings.setter
    def settings(self, settings: CycleSettings) -> None:
        self._settings = self._configured = settings
        self._assemble_step_parts(self.step_metrics.dropped_on_resume)
        self._apply_rollback_changes()

    def _apply_rollback_changes(self) -> None:
        """Sets the rollout and algorithm parameters the rollbacks done so far call for
        (:mod:`rollback_changes`); the experience maker and the optimizer use them from the
        next step on. Nothing changes when they are the current ones."""
        base = self._configured
        rollout, algorithm = settings_after(
            base.health.rollback, base.rollout, base.algorithm, len(self.health.guard.rollbacks)
        )
        if rollout == self._settings.rollout and algorithm == self._settings.algorithm:
            return
        self.maker.rollout, self.maker.algorithm = rollout, algorithm
        self.optimizer = PolicyOptimizer(
            policy=self.components.policy,
            strategy=self.components.policy_strategy,
            collective=self.components.collective,
            algorithm=algorithm,
            train=self._settings.train,
            critic=self.components.critic,
            critic_strategy=self.components.critic_strategy,
        )
        self._settings = replace(self._settings, rollout=rollout, algorithm=algorithm)
        self._assemble_step_parts(self.step_metrics.dropped_on_resume)
        self.health.guard.warn(
            "health.rollback_settings",
            rollbacks=len(self.health.guard.rollbacks),
            **self._rollback_settings(),
        )

    def _rollback_settings(self) -> dict[str, float]:
        """The current values of the settings a rollback changes (only with
        ``train.on_collapse=rollback``)."""
        s = self._settings
        if s.health.on_collapse != "rollback":
            return {}
        return readings(s.health.rollback, s.rollout, s.algorithm)

    def _assemble_step_parts(self, dropped_on_resume: int) -> None:
        c, s = self.components, self._settings
        asynchronous = s.off_policy.mode != "sync"
        self.prompts = StepPrompts(c.prompts, c.collective, s.rollout, s.cycle)
        self.samples = SampleLog(
            c.policy,
            c.tracker,
            c.collective,
            s.cycle.log_samples_per_step,
            s.rollout.sampling.logprob_temperature,
            tag_versions=asynchronous,
        )
        self.update = UpdatePolicy(self.phases, self.optimizer, self.samples)
        self.step_metrics = StepMetrics(
            self.phases, self.feed, c.collective, asynchronous=asynchronous
        )
        self.step_metrics.dropped_on_resume = dropped_on_resume
        self.checkpoints = CycleCheckpoints(
            c.checkpoints,
            c.collective,
            (c.policy_strategy, c.critic_strategy),
            self.health,
            self.feed,
            s.algorithm,
            s.shaping,
            asynchronous=asynchronous,
        )

    # -- the loop ---------------------------------------------------------------------

    def run(
        self,
        *,
        resume: bool = True,
        max_steps: int | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> list[dict[str, float]]:
        """Trains until :attr:`last_step` (or ``max_steps`` more steps); returns the history.

        ``should_stop()`` is asked after every step (on every rank: it must answer the same
        everywhere); when it says yes, a checkpoint is saved and the run ends early with
        ``stopped_early`` set. A reward source over its failure limit
        (:class:`RewardSourceFailingError`) saves a checkpoint of the state before the
        failing step, then the error propagates.
        """
        cycle = self.settings.cycle
        if resume:
            self.resume()
        if self._evaluating and self.state.step == 0:
            before = self.evaluate()
            self.health.after_eval(0, before)
            self._log(before, step=0)
        stop_at = None if max_steps is None else self.state.step + max_steps
        try:
            while self.state.step < (
                self.last_step if stop_at is None else min(self.last_step, stop_at)
            ):
                metrics = self._step_or_save_and_raise()
                step = self.state.step
                # judged before the step's evaluation: a rollback returns to a state from
                # before the collapse (not the one evaluated now), and the run's final
                # evaluation is of the weights it ends with (a rollback with redo_steps
                # makes this step no longer the last)
                collapsed = self._watch_health(step, metrics)
                last = step == self.last_step
                if self._evaluating and cycle.eval_every and (step % cycle.eval_every == 0 or last):
                    metrics.update(self.evaluate())
                    self.health.after_eval(step, metrics)
                # logged before the checkpoint: a crash in between repeats the step on resume
                # (its rows are trimmed then), never loses its row
                self._log(metrics, step=step)
                self.history.append(metrics)
                every = cycle.checkpoint_every
                saved = every is not None and every > 0 and (last or step % every == 0)
                if saved:
                    self.save_checkpoint()
                if collapsed or (should_stop is not None and should_stop()):
                    if not saved and self.components.checkpoints is not None:
                        self.save_checkpoint()
                    self.stopped_early = not (last or collapsed)  # a collapse stop is an ending
                    reason = "train.on_collapse=stop" if collapsed else "stop requested"
                    log.warning("run.stopped", step=step, reason=reason)
                    break
        except BaseException as error:
            self._close_feed_after(error)
            raise
        self.phases.rest()
        self.feed.close()
        return self.history

    @property
    def last_step(self) -> int:
        """The run's last step: ``total_steps``, plus the steps rollbacks undid when they are
        taken again (``train.collapse_rollback.redo_steps``)."""
        return self.settings.cycle.total_steps + self.health.guard.redone_steps

    def _close_feed_after(self, error: BaseException) -> None:
        """Stops the feed (its producer thread, its engine process) after ``error``; a feed
        that cannot stop in time is logged and noted on ``error``, which stays the one raised."""
        try:
            self.feed.close()
        except Exception as close_error:
            log.error("async.feed_close_failed", error=repr(close_error))
            error.add_note(f"while stopping the rollout feed after it: {close_error}")

    def _step_or_save_and_raise(self) -> dict[str, float]:
        """:meth:`train_step`; when a reward source is over its failure limit, the state
        before the step (RNG included) is checkpointed and the error re-raised."""
        rng = torch.get_rng_state()
        try:
            return self.train_step()
        except (RewardSourceFailingError, ProducerDiedError, DeadlineExceededError):
            torch.set_rng_state(rng)
            if self.components.checkpoints is not None:
                with self.phases.phase(Phase.TRAIN):
                    self.save_checkpoint()
            self.phases.rest()
            raise

    def _watch_health(self, step: int, metrics: dict[str, float]) -> bool:
        """Health checks of the step (``health/*`` added to ``metrics``, see
        :mod:`health_watch`); returns whether ``train.on_collapse=stop`` ends the run."""
        outcome = self.health.after_step(step, metrics)
        if outcome.restored:
            self.policy_version += 1  # rolled back: the engine needs the restored weights
            self._apply_rollback_changes()
            self.health.guard.note_settings(self._rollback_settings())
        metrics.update({READINGS_PREFIX + k: v for k, v in self._rollback_settings().items()})
        return outcome.stop

    @property
    def _evaluating(self) -> bool:
        return (
            self.components.eval_prompts is not None and self.settings.cycle.eval_every is not None
        )

    def train_step(self) -> dict[str, float]:
        """One RL step; returns its metrics (the state's step is advanced).

        Each line below enters one module and none is entered again later in the step
        (tests/unit/application/test_step_walk.py)."""
        started = time.perf_counter()
        step = self.state.step
        tagged = self.feed.take(step, self.policy_version)
        batch = self.maker.annotate(
            tagged.item,
            kl_coef=self.state.kl.value,
            moments=self.state.reward_moments,
            constraints=self.state.constraints,
        )
        self.reward_failures.observe(step + 1, batch.metrics)  # numbered as logged
        self.health.before_update(step + 1, batch.metrics)  # may keep this state as the best
        update = self.update(batch, kl_coef=self.state.kl.value, step=step)
        if update.updated_policy:
            self.policy_version += 1
        observed_kl = batch.kl if batch.kl is not None else update.result.kl
        kl = self.state.kl.update(observed_kl or 0.0, len(batch.experience))
        metrics = dict(update.result.metrics)
        metrics["kl/coef"] = self.state.kl.value
        self.state = replace(
            self.state,
            step=step + 1,
            kl=kl,
            reward_moments=batch.reward_moments,
            constraints=batch.constraints,
        )
        metrics.update(batch.metrics)
        metrics = self.step_metrics.complete(metrics, batch, time.perf_counter() - started)
        self.samples.log(batch, step + 1, update.traces, tagged.version)
        return metrics

    def produce_rollout(self, step: int) -> Tagged[CollectedRollout]:
        """Generates and scores the batch of ``step`` with the engine synced to the current
        policy (colocated placement), tagged with that policy version."""
        self._sync_engine()
        return Tagged(step, self.policy_version, self.collect_batch(step, self.maker))

    def collect_batch(self, step: int, maker: ExperienceMaker) -> CollectedRollout:
        """The batch of ``step`` (this rank's prompts, the step's seed) from ``maker``'s
        engine, with the schedule's balance metrics."""
        scheduled = self._follow_temperature_schedule(step, maker)
        prompts, balance = self.prompts(step)
        collected = maker.collect(prompts, seed=self.prompts.seed(step))
        return replace(collected, metrics={**collected.metrics, **balance, **scheduled})

    def _follow_temperature_schedule(self, step: int, maker: ExperienceMaker) -> dict[str, float]:
        """Sets ``maker``'s sampling temperature to the schedule's for the batch of ``step``
        (0-based: the schedule's step ``step + 1``; ``rollout.temperature_schedule``, plus what
        collapse rollbacks added) and returns the ``rollout/temperature`` metric; nothing
        without a schedule."""
        schedule = self._configured.rollout.temperature_schedule
        if schedule is None:
            return {}
        configured = self._configured.rollout.sampling.temperature
        added = self._settings.rollout.sampling.temperature - configured
        temperature = schedule.at(step + 1) + added
        sampling = maker.rollout.sampling
        if sampling.temperature != temperature:
            maker.rollout = replace(
                maker.rollout, sampling=replace(sampling, temperature=temperature)
            )
        return {"rollout/temperature": temperature}

    def rollout_seed(self, step: int) -> int:
        """The sampling seed of the batch of ``step``."""
        return self.prompts.seed(step)

    def step_prompts(self, step: int) -> tuple[list[PromptRecord], dict[str, float]]:
        """This rank's prompts of ``step`` and the balance metrics of the schedule."""
        return self.prompts(step)

    def evaluate(self) -> dict[str, float]:
        """Evaluation metrics of the current policy on the held-out prompts."""
        c = self.components
        assert c.eval_prompts is not None
        self._sync_engine()
        return self.evaluator.evaluate(
            c.eval_prompts,
            self.settings.cycle.eval_sampling,
            self.settings.cycle.eval_max_prompts,
            phases=self.phases,
        )

    def _sync_engine(self) -> None:
        if self.engine_version == self.policy_version:
            return
        c = self.components
        with self.phases.phase(Phase.WEIGHT_SYNC):
            sync_engine_weights(
                c.engine,
                c.policy.weights_for_sync(c.policy_strategy.full_state()),
                self.policy_version,
                verify=self.settings.off_policy.verify_weight_sync,
            )
        self.engine_version = self.policy_version

    # -- checkpoints (:mod:`cycle_checkpoint`) ------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue bitwise identically."""
        return self.checkpoints.state_dict(self.state, self.policy_version)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict`; the engine is re-synced before its next use."""
        restored = self.checkpoints.load_state_dict(state)
        self.state, self.policy_version = restored.state, restored.policy_version
        self.engine_version = None
        self.step_metrics.dropped_on_resume = restored.dropped_batches
        self._apply_rollback_changes()  # the checkpoint's rollbacks call for them

    def save_checkpoint(self) -> None:
        """Saves the run state at the current step (atomic, through the store)."""
        self.checkpoints.save(self.state.step, self.state_dict())

    def resume(self) -> bool:
        """Loads the newest intact checkpoint if there is one; returns whether it did."""
        found = self.checkpoints.newest()
        if found is None:
            return False
        step, state = found
        try:
            self.load_state_dict(state)
        except CheckpointShapeError as exc:
            raise exc.at_step(step) from None
        log.info("checkpoint.resumed", step=step)
        return True

    def _log(self, metrics: Mapping[str, float], step: int) -> None:
        if self.components.collective.rank == 0:
            self.components.tracker.log_metrics(dict(metrics), step)


def _switches(c: CycleComponents) -> dict[str, Switch]:
    switches = {
        "engine": Switch(on=c.engine.wake_up, off=c.engine.sleep),
        "policy": Switch(on=c.policy_strategy.onload, off=c.policy_strategy.offload),
        "reward_models": Switch(
            on=_each(c.reward_sources, lambda source: source.onload()),
            off=_each(c.reward_sources, lambda source: source.offload()),
        ),
    }
    if c.reference is not None:
        switches["reference"] = Switch(on=c.reference.onload, off=c.reference.offload)
    if c.teachers:
        switches["teachers"] = Switch(
            on=_each(c.teachers, lambda teacher: teacher.onload()),
            off=_each(c.teachers, lambda teacher: teacher.offload()),
        )
    if c.critic_strategy is not None:
        switches["critic"] = Switch(on=c.critic_strategy.onload, off=c.critic_strategy.offload)
    return switches


def _each(items: Sequence[_T], action: Callable[[_T], None]) -> Callable[[], None]:
    """A switch action that applies ``action`` to every item (reward sources, teachers)."""

    def run() -> None:
        for item in items:
            action(item)

    return run
