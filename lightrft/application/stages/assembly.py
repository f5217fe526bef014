"""Chooses the experience stages once from the ports and settings.

The choices read the settings only (which models exist, the estimator's needs, the loss, the
optimizer's row skipping); what a stage does depends on the step only through its KL
coefficient (a reference's forward runs when it is above 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lightrft.application.params import AlgorithmParams, RewardShapingParams, RolloutParams
from lightrft.application.phases import Phase, PhaseSwitcher
from lightrft.application.stages.advantages import Advantages
from lightrft.application.stages.collection import Collection, SampleAndScore, Sampler
from lightrft.application.stages.critic_values import CriticValues
from lightrft.application.stages.dynamic_sampling import DynamicSampling
from lightrft.application.stages.generate import Generate
from lightrft.application.stages.greedy_baseline import GreedyBaseline
from lightrft.application.stages.high_entropy import HighEntropyTokens
from lightrft.application.stages.in_phase import InPhase
from lightrft.application.stages.kl_estimate import KLEstimate
from lightrft.application.stages.no_grad_forward import NoGradForward, PlanForwards
from lightrft.application.stages.old_logprobs import OldLogprobs
from lightrft.application.stages.records import AnnotationStage
from lightrft.application.stages.reference_logprobs import ReferenceLogprobs
from lightrft.application.stages.rollout_correction import RolloutCorrection
from lightrft.application.stages.score import Score
from lightrft.application.stages.shaping import ShapeRewards
from lightrft.application.stages.step_credit import StepCredit
from lightrft.application.stages.teacher_logprobs import TeacherLogprobs
from lightrft.application.stages.trained_row_selection import SelectTrainedRows
from lightrft.application.stages.turn_credit import TurnCredit
from lightrft.application.trained_rows import skips_zero_loss_rows
from lightrft.domain.ports import (
    Collective,
    Critic,
    Policy,
    ReferenceModel,
    RewardSource,
    RolloutEngine,
)


@dataclass(frozen=True)
class ExperienceParts:
    """The ports and settings the stages are made of. ``recompute_old_logprobs``: the old
    log-probs are needed although nothing else reads them (several optimizer steps per
    batch); ``skip_zero_advantage_rows``: the optimizer's ``TrainParams`` flag."""

    engine: RolloutEngine
    policy: Policy
    reward_sources: Sequence[RewardSource]
    collective: Collective
    phases: PhaseSwitcher
    rollout: RolloutParams
    algorithm: AlgorithmParams
    shaping: RewardShapingParams
    reference: ReferenceModel | None = None
    critic: Critic | None = None
    teachers: Sequence[ReferenceModel] = ()
    recompute_old_logprobs: bool = True
    skip_zero_advantage_rows: bool = False


@dataclass(frozen=True)
class ExperiencePipeline:
    """The collection and the annotation stages in their order."""

    collection: Collection
    annotation: tuple[AnnotationStage, ...]

    def stage_names(self) -> list[str]:
        """The annotation stages' class names in order, a phase's stages inside it."""
        names: list[str] = []
        for stage in self.annotation:
            names.append(type(stage).__name__)
            if isinstance(stage, InPhase):
                names.extend(f"{stage.phase}:{type(inner).__name__}" for inner in stage.stages)
        return names


def assemble(p: ExperienceParts) -> ExperiencePipeline:
    """The stages of ``p``; raises ``ValueError`` for a model an estimator needs and lacks."""
    _check(p)
    return ExperiencePipeline(_collection(p), tuple(_annotation(p)))


def _check(p: ExperienceParts) -> None:
    estimator = p.algorithm.estimator
    if not p.reward_sources:
        raise ValueError("reward_sources is empty; need at least one reward source")
    if estimator.needs_values and p.critic is None:
        raise ValueError(f"advantage estimator {estimator.name!r} needs a critic")
    if p.algorithm.kl_coef > 0 and p.reference is None:
        raise ValueError("kl_coef > 0 needs a reference model")
    weights = p.algorithm.advantage.teacher_weights
    if estimator.needs_teachers and len(p.teachers) != len(weights):
        raise ValueError(
            f"advantage estimator {estimator.name!r} weighs {len(weights)} teacher(s) "
            f"but {len(p.teachers)} teacher model(s) were given"
        )


def _collection(p: ExperienceParts) -> Collection:
    generate = Generate(p.engine, p.phases)
    score = Score(p.reward_sources, p.shaping, p.phases)
    once = SampleAndScore(generate, score, p.rollout.sampling)
    sample: Sampler = once.once
    if p.rollout.dynamic_sampling:
        sample = DynamicSampling(once, p.rollout.max_sampling_rounds, p.collective)
    baseline = None
    if p.algorithm.estimator.needs_baseline_rewards:
        baseline = GreedyBaseline(generate, score, p.rollout.sampling)
    return Collection(sample, baseline)


def _annotation(p: ExperienceParts) -> list[AnnotationStage]:
    a, estimator = p.algorithm, p.algorithm.estimator
    stages: list[AnnotationStage] = [
        ShapeRewards(p.shaping, p.rollout.sampling.max_new_tokens, p.collective)
    ]
    if a.turn_credit:
        stages.append(TurnCredit())
    if estimator.needs_step_rewards:
        stages.append(StepCredit())
    forward = NoGradForward(p.rollout, p.collective, a.logprob_temperature)
    advantages = Advantages(a, p.shaping, p.collective)
    entropy = a.high_entropy_fraction is not None
    correcting = a.resolved_loss.tis_cap is not None
    # readers of the old log-probs on every step (the KL in the reward reads them only on
    # steps with a KL coefficient above 0)
    always_old = p.recompute_old_logprobs or estimator.needs_teachers or entropy or correcting
    forwards: list[AnnotationStage] = [PlanForwards(forward)]
    if _trained_rows_first(p, always_old):
        forwards.append(
            SelectTrainedRows(advantages, forward, with_reference=p.reference is not None)
        )
    if always_old or (estimator.kl_in_reward and p.reference is not None):
        forwards.append(OldLogprobs(p.policy, forward, always=always_old, with_entropy=entropy))
    if p.reference is not None:
        forwards.append(ReferenceLogprobs(p.reference, forward))
    if estimator.needs_teachers:
        forwards.append(TeacherLogprobs(p.teachers, forward))
    if p.critic is not None:
        forwards.append(CriticValues(p.critic, forward))
    if p.rollout.measure_mismatch or correcting:
        temperature = p.rollout.sampling.logprob_temperature
        forwards.append(
            RolloutCorrection(
                p.policy,
                forward,
                temperature,
                measure=p.rollout.measure_mismatch,
                correct=correcting,
            )
        )
    if p.reference is not None:
        forwards.append(KLEstimate(a.kl_estimator))
    forwards.append(advantages)
    if a.high_entropy_fraction is not None:
        forwards.append(HighEntropyTokens(a.high_entropy_fraction))
    stages.append(InPhase(p.phases, Phase.REFERENCE, forwards))
    return stages


def _trained_rows_first(p: ExperienceParts, always_old: bool) -> bool:
    """Whether the old log-probs are read by the loss ratio only and the optimizer trains
    only the rows with a non-zero advantage (:mod:`trained_row_selection`)."""
    a = p.algorithm
    only_the_loss_reads_old = not (
        a.estimator.needs_teachers
        or a.high_entropy_fraction is not None
        or p.rollout.measure_mismatch
    )
    return (
        always_old
        and only_the_loss_reads_old
        and skips_zero_loss_rows(
            a,
            skip_zero_advantage_rows=p.skip_zero_advantage_rows,
            critic=p.critic is not None,
            kl_term=False,  # a step with a KL term leaves the selection out
        )
    )
