"""The constraint step of an RL step: batch costs -> multiplier update -> combined advantages.

Shapes: B samples, R response tokens.

For every :class:`~lightrft.domain.constraints.CostLimit` the cost of each sample is read from
its reward source's scores (that source has weight 0 in the reward); the batch mean cost (over
all data-parallel ranks) updates the multiplier by projected dual ascent, then the cost
advantages (the run's advantage estimator on the costs, without KL) are folded into the reward
advantages with the updated multipliers (Safe RLHF's normalised form, see
:mod:`lightrft.domain.constraints`). Metrics ``constraint/<name>/cost`` (batch mean cost),
``/multiplier`` (after the update) and ``/violation_rate`` (fraction of samples whose score
is above the violation threshold).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from lightrft.domain.advantages import AdvantageInputs, AdvantageParams, compute_advantages
from lightrft.domain.constraints import (
    CostLimit,
    combine_advantages,
    update_multiplier,
    violations,
)
from lightrft.domain.reduce import AllReduceSum


@dataclass(frozen=True)
class ConstraintState:
    """The multiplier of each constraint (in the order of the limits); checkpointed."""

    multipliers: tuple[float, ...] = ()

    @classmethod
    def initial(cls, limits: Sequence[CostLimit]) -> ConstraintState:
        """Every multiplier at its ``init``."""
        return cls(tuple(float(limit.init) for limit in limits))

    def to_dict(self, limits: Sequence[CostLimit]) -> dict[str, float]:
        """``{constraint name: multiplier}`` (the checkpoint form)."""
        return dict(zip([limit.name for limit in limits], self.multipliers, strict=True))

    @classmethod
    def from_dict(cls, saved: Mapping[str, float], limits: Sequence[CostLimit]) -> ConstraintState:
        """The state of :meth:`to_dict`; a checkpoint without a constraint of ``limits`` (or
        with one the config lacks) is an error naming it."""
        names = [limit.name for limit in limits]
        if sorted(saved) != sorted(names):
            raise ValueError(
                f"checkpoint holds multipliers of constraints {sorted(saved)}, the config "
                f"asks for reward.constraints {sorted(names)}"
            )
        return cls(tuple(float(saved[name]) for name in names))


@dataclass(frozen=True)
class ConstrainedAdvantages:
    """Combined advantages (B, R), the updated state and the ``constraint/*`` metrics."""

    advantages: Tensor
    state: ConstraintState
    metrics: dict[str, float]


def _global_means(values: Sequence[Tensor], all_reduce_sum: AllReduceSum) -> list[float]:
    """Mean of each (B,) tensor over the samples of every rank."""
    count = float(values[0].numel()) if values else 0.0
    sums = torch.tensor([float(v.double().sum()) for v in values] + [count], dtype=torch.float64)
    totals = all_reduce_sum(sums)
    return [float(t) / float(totals[-1]) for t in totals[:-1]]


def apply_constraints(
    limits: Sequence[CostLimit],
    state: ConstraintState,
    scores_by_source: Mapping[str, Tensor],
    reward_advantages: Tensor,
    inputs: AdvantageInputs,
    estimator: str,
    params: AdvantageParams,
    all_reduce_sum: AllReduceSum,
) -> ConstrainedAdvantages:
    """Updates every multiplier from this batch's costs and combines the advantages.

    Shape: scores_by_source values (B,), reward_advantages (B, R); ``inputs`` gives the
    response mask and groups (its rewards are replaced by each cost). Every rank must call it.
    """
    if not limits:
        return ConstrainedAdvantages(reward_advantages, state, {})
    multipliers: list[float] = []
    cost_advantages: list[Tensor] = []
    metrics: dict[str, float] = {}
    cost_params = AdvantageParams(
        eps=params.eps, gamma=params.gamma, lam=params.lam, whiten_eps=params.whiten_eps
    )
    for limit, multiplier in zip(limits, state.multipliers, strict=True):
        if limit.name not in scores_by_source:
            raise ValueError(
                f"constraint {limit.name!r} names no scored reward source; scored: "
                f"{sorted(scores_by_source)}"
            )
        scores = scores_by_source[limit.name].float()
        violated = violations(scores, limit.violation_threshold)
        costs = violated if limit.as_violation else scores
        mean_cost, violation_rate = _global_means([costs, violated], all_reduce_sum)
        updated = update_multiplier(multiplier, mean_cost, limit.limit, limit.multiplier_lr)
        multipliers.append(updated)
        cost_inputs = AdvantageInputs(costs, inputs.response_mask, inputs.group_index)
        cost_advantages.append(
            compute_advantages(estimator, cost_inputs, cost_params, all_reduce_sum).advantages
        )
        metrics[f"constraint/{limit.name}/cost"] = mean_cost
        metrics[f"constraint/{limit.name}/multiplier"] = updated
        metrics[f"constraint/{limit.name}/violation_rate"] = violation_rate
    combined = combine_advantages(reward_advantages, cost_advantages, multipliers)
    return ConstrainedAdvantages(combined, ConstraintState(tuple(multipliers)), metrics)


__all__ = ["ConstrainedAdvantages", "ConstraintState", "apply_constraints"]
