"""Cost constraints (Safe RLHF, Dai et al. 2023, arXiv:2310.12773): the Lagrange multiplier of
each cost limit and the advantage that trades the reward against the costs.

Shapes: B samples, R response tokens, K constraints.

The constrained problem is ``max J_R(theta)`` subject to ``J_C,k(theta) = E[C_k] <= d_k`` for
every constraint k. Its Lagrangian dual ``min_{lambda >= 0} max_theta J_R - sum_k lambda_k
(J_C,k - d_k)`` is solved by alternating a policy step with a projected dual-ascent step on
each multiplier, in the plain (not log) parameterisation:

    lambda_k <- max(0, lambda_k + eta_k * (mean_cost_k - d_k))

with ``mean_cost_k`` the batch mean of the cost (Safe RLHF; the paper's implementation
steps ``log lambda`` with an optimizer, the plain projected form is the textbook one and keeps
a multiplier of exactly 0 reachable). The policy is trained on the normalised advantage of
Safe RLHF, extended to K constraints:

    A = (A_R - sum_k lambda_k * A_C,k) / (1 + sum_k lambda_k)

so a large multiplier makes the step mostly a cost-reducing one while the advantage stays on
the reward's scale. Everything here is pure: floats in, floats out, tensors for advantages.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from lightrft.domain.checks import check_finite, check_non_negative, check_shape
from lightrft.domain.cost_limit import CostLimit as CostLimit


def update_multiplier(multiplier: float, mean_cost: float, limit: float, lr: float) -> float:
    """Projected dual ascent: ``max(0, multiplier + lr * (mean_cost - limit))``.

    The multiplier grows while the batch's mean cost is above the limit and shrinks (to 0 at
    the least) while it is below.
    """
    if not (mean_cost == mean_cost and abs(mean_cost) != float("inf")):  # NaN or inf
        raise ValueError(f"mean cost must be finite, got {mean_cost}")
    return max(0.0, multiplier + lr * (mean_cost - limit))


def combine_advantages(
    reward_advantages: Tensor, cost_advantages: Sequence[Tensor], multipliers: Sequence[float]
) -> Tensor:
    """Safe RLHF's normalised advantage ``(A_R - sum_k lambda_k A_C,k) / (1 + sum_k lambda_k)``.

    Shape: reward_advantages (B, R), each of cost_advantages (B, R), multipliers K floats
    (>= 0) -> (B, R). Positions that are 0 in every input stay 0.
    """
    if len(cost_advantages) != len(multipliers):
        raise ValueError(
            f"{len(cost_advantages)} cost advantages for {len(multipliers)} multipliers"
        )
    check_shape("reward_advantages", reward_advantages, (None, None))
    combined = reward_advantages.clone()
    for k, (advantages, multiplier) in enumerate(zip(cost_advantages, multipliers, strict=True)):
        check_non_negative(f"multipliers[{k}]", multiplier)
        check_shape(f"cost_advantages[{k}]", advantages, tuple(reward_advantages.shape))
        combined = combined - multiplier * advantages
    return combined / (1.0 + sum(multipliers))


def violations(scores: Tensor, threshold: float) -> Tensor:
    """1.0 where a sample's cost score is above ``threshold`` (Safe RLHF reads a cost model's
    score > 0 as unsafe), else 0.0. Shape: scores (B,) -> (B,) float."""
    check_shape("scores", scores, (None,))
    check_finite("scores", scores)
    return (scores > threshold).to(torch.get_default_dtype())


__all__ = ["CostLimit", "combine_advantages", "update_multiplier", "violations"]
