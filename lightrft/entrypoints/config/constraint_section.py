"""``reward.constraints``: cost limits on reward sources (Safe RLHF, arXiv:2310.12773).

A constraint names a source of ``reward.sources`` (any type: a cost model trained with
``lightrft rm train`` on safe/unsafe rows, a rule, a remote service) whose score is the
*cost* of a sample; that source must have weight 0 (it is not part of the reward). The
formulas are in ``docs/algorithms.md`` ("Cost constraints") and
:mod:`lightrft.domain.constraints`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lightrft.domain.cost_limit import CostLimit
from lightrft.entrypoints.config.base import Section
from lightrft.entrypoints.field_copy import params_from


class ConstraintConfig(Section):
    """One cost limit ``E[cost] <= limit`` enforced with a Lagrange multiplier."""

    source: str = Field(
        description="Name of the reward source (in reward.sources, weight 0) whose score is "
        "the cost; also the constraint's metric name (constraint/<source>/...)."
    )
    limit: float = Field(
        description="The largest allowed batch mean cost d (with cost=violation: the largest "
        "allowed violation rate, in [0, 1])."
    )
    multiplier_lr: float = Field(
        0.1,
        gt=0,
        description="Dual-ascent step: lambda <- max(0, lambda + multiplier_lr * (mean cost - "
        "limit)) every step (plain, not log, parameterisation).",
    )
    init: float = Field(1.0, ge=0, description="The multiplier lambda at step 0.")
    cost: Literal["score", "violation"] = Field(
        "score",
        description="The cost of a sample: the source's score (Safe RLHF), or 'violation': 1 "
        "when the score is above violation_threshold, else 0 (the limit is then a rate).",
    )
    violation_threshold: float = Field(
        0.0,
        description="A score above it is a violation (constraint/<source>/violation_rate); 0 "
        "reads a Safe RLHF cost model's sign (cost > 0: unsafe).",
    )

    def to_domain(self) -> CostLimit:
        """The domain's :class:`CostLimit`."""
        return params_from(CostLimit, self, name=self.source, as_violation=self.cost == "violation")

    def check_limit(self, where: str) -> None:
        """A violation-rate limit outside [0, 1] cannot be met or cannot bind."""
        if self.cost == "violation" and not 0.0 <= self.limit <= 1.0:
            raise ValueError(
                f"{where}.limit ({self.limit}) bounds a violation rate (cost=violation): it "
                "must lie in [0, 1]"
            )


__all__ = ["ConstraintConfig"]
