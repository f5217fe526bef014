"""The advantage stage: the estimator's advantages and returns (KL in the reward when the
estimator puts it there), the constraints' cost advantages folded in (their multipliers
updated), clipped to ``shaping.advantage_clip``."""

from __future__ import annotations

from dataclasses import replace

from lightrft.application.constraint_step import apply_constraints
from lightrft.application.params import AlgorithmParams, RewardShapingParams
from lightrft.application.stages.records import Annotation
from lightrft.domain.advantages import AdvantageInputs, compute_advantages
from lightrft.domain.ports import Collective
from lightrft.domain.rewards import clip_values


class Advantages:
    """Sets ``advantages``, ``returns`` and ``constraints`` and adds the ``advantages/*``
    and ``constraint/*`` metrics; as a stage it reads every forward's result, and skips a
    step whose advantages were computed before the forwards (:meth:`compute`)."""

    def __init__(
        self, algorithm: AlgorithmParams, shaping: RewardShapingParams, collective: Collective
    ) -> None:
        self.algorithm, self.shaping, self.collective = algorithm, shaping, collective
        self.estimator = algorithm.estimator

    def __call__(self, work: Annotation) -> None:
        """Advantages from the rewards and what the forwards gave (values, KL, teachers)."""
        if work.advantages is not None:
            return  # computed before the old log-probs (the trained-row selection)
        kl_in_reward = self.estimator.kl_in_reward and work.kl is not None
        inputs = replace(
            work.advantage_inputs(),
            values=work.values,
            kl=work.kl if kl_in_reward else None,
            logprobs=work.old if work.teacher is not None else None,
            teacher_logprobs=work.teacher,
        )
        self.compute(work, inputs, work.kl_coef if kl_in_reward else 0.0)

    def compute(self, work: Annotation, inputs: AdvantageInputs, kl_coef: float) -> None:
        """Advantages of ``inputs`` with the KL in the reward weighed by ``kl_coef``."""
        params = replace(self.algorithm.advantage, kl_coef=kl_coef)
        out = compute_advantages(
            self.estimator.name, inputs, params, self.collective.all_reduce_sum
        )
        advantages = out.advantages
        metrics: dict[str, float] = {}
        if self.shaping.constraints:
            constrained = apply_constraints(
                self.shaping.constraints,
                work.constraints,
                work.collected.rollout.scores.by_source,
                advantages,
                AdvantageInputs(inputs.rewards, inputs.response_mask, inputs.group_index),
                self.estimator.name,
                self.algorithm.advantage,
                self.collective.all_reduce_sum,
            )
            advantages, work.constraints = constrained.advantages, constrained.state
            metrics = dict(constrained.metrics)
        if self.shaping.advantage_clip is not None:
            advantages = clip_values(advantages, self.shaping.advantage_clip) * inputs.response_mask
        metrics.update({k: float(v) for k, v in out.metrics.items()})
        work.advantages, work.returns = advantages, out.returns
        work.metrics.update(metrics)
