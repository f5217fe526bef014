"""ExperienceMaker: prompts -> rollouts -> rewards -> log-probs -> advantages -> Experience,
as the stages of :mod:`lightrft.application.stages` that :func:`~lightrft.application.stages.assembly.assemble`
chose once from its parts.

Shapes: B samples (prompts x n), R response tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

from lightrft.application.constraint_step import ConstraintState
from lightrft.application.params import AlgorithmParams, RewardShapingParams, RolloutParams
from lightrft.application.phases import PhaseSwitcher
from lightrft.application.stages.assembly import ExperienceParts, ExperiencePipeline, assemble
from lightrft.application.stages.experience_batch import experience_batch
from lightrft.application.stages.records import Annotation, CollectedRollout, ExperienceBatch
from lightrft.domain.ports import (
    Collective,
    Critic,
    Policy,
    ReferenceModel,
    RewardSource,
    RolloutEngine,
)
from lightrft.domain.rewards import RunningMoments
from lightrft.domain.types import PromptRecord

__all__ = ["CollectedRollout", "ExperienceBatch", "ExperienceMaker"]

_PARTS = frozenset(
    {
        "engine",
        "policy",
        "reward_sources",
        "collective",
        "phases",
        "rollout",
        "algorithm",
        "shaping",
        "reference",
        "critic",
        "teachers",
        "recompute_old_logprobs",
        "skip_zero_advantage_rows",
    }
)


class ExperienceMaker:
    """Builds one step's :class:`ExperienceBatch` from a batch of prompts through the ports:
    :meth:`collect` (generate, score) then :meth:`annotate` (shaping, the no-grad forwards,
    advantages), each running its stages in order.

    The parts are attributes; setting one (a test swapping a port) assembles the stages
    again before the next use.
    """

    engine: RolloutEngine
    policy: Policy
    reward_sources: list[RewardSource]
    collective: Collective
    phases: PhaseSwitcher
    rollout: RolloutParams
    algorithm: AlgorithmParams
    shaping: RewardShapingParams
    reference: ReferenceModel | None
    critic: Critic | None
    teachers: list[ReferenceModel]
    recompute_old_logprobs: bool
    skip_zero_advantage_rows: bool

    def __init__(
        self,
        *,
        engine: RolloutEngine,
        policy: Policy,
        reward_sources: Sequence[RewardSource],
        collective: Collective,
        phases: PhaseSwitcher,
        rollout: RolloutParams,
        algorithm: AlgorithmParams,
        shaping: RewardShapingParams,
        reference: ReferenceModel | None = None,
        critic: Critic | None = None,
        recompute_old_logprobs: bool = True,
        teachers: Sequence[ReferenceModel] = (),
        skip_zero_advantage_rows: bool = False,
    ) -> None:
        """``skip_zero_advantage_rows``: the optimizer's ``TrainParams`` flag
        (:mod:`~lightrft.application.stages.trained_row_selection`)."""
        self.engine, self.policy, self.reward_sources = engine, policy, list(reward_sources)
        self.collective, self.phases = collective, phases
        self.rollout, self.algorithm, self.shaping = rollout, algorithm, shaping
        self.reference, self.critic, self.teachers = reference, critic, list(teachers)
        self.recompute_old_logprobs = recompute_old_logprobs
        self.skip_zero_advantage_rows = skip_zero_advantage_rows
        self._pipeline: ExperiencePipeline | None = assemble(self._parts())

    def __setattr__(self, name: str, value: object) -> None:
        super().__setattr__(name, value)
        if name in _PARTS:
            super().__setattr__("_pipeline", None)

    @property
    def pipeline(self) -> ExperiencePipeline:
        """The stages of the current parts."""
        if self._pipeline is None:
            self._pipeline = assemble(self._parts())
        return self._pipeline

    def _parts(self) -> ExperienceParts:
        return ExperienceParts(
            engine=self.engine,
            policy=self.policy,
            reward_sources=self.reward_sources,
            collective=self.collective,
            phases=self.phases,
            rollout=self.rollout,
            algorithm=self.algorithm,
            shaping=self.shaping,
            reference=self.reference,
            critic=self.critic,
            teachers=self.teachers,
            recompute_old_logprobs=self.recompute_old_logprobs,
            skip_zero_advantage_rows=self.skip_zero_advantage_rows,
        )

    def make(
        self, prompts: Sequence[PromptRecord], *, seed: int, kl_coef: float, moments: RunningMoments
    ) -> ExperienceBatch:
        """One step's experience from ``prompts`` (each sampled ``sampling.n`` times)."""
        return self.annotate(self.collect(prompts, seed=seed), kl_coef=kl_coef, moments=moments)

    def collect(self, prompts: Sequence[PromptRecord], *, seed: int) -> CollectedRollout:
        """The generation half of :meth:`make`: samples and scores (and the greedy
        baseline when the estimator needs one); uses the engine and reward sources only."""
        return self.pipeline.collection(prompts, seed)

    def annotate(
        self,
        collected: CollectedRollout,
        *,
        kl_coef: float,
        moments: RunningMoments,
        constraints: ConstraintState | None = None,
    ) -> ExperienceBatch:
        """The training half of :meth:`make`: rewards shaped, log-probs, advantages (with
        ``shaping.constraints``: their multipliers updated from ``constraints``, the initial
        state when None, and the cost advantages folded in)."""
        if constraints is None:
            constraints = ConstraintState.initial(self.shaping.constraints)
        work = Annotation.begin(collected, self.rollout.pad_token_id, kl_coef, moments, constraints)
        for stage in self.pipeline.annotation:
            stage(work)
        return experience_batch(work)
