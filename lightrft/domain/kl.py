"""KL(pi || pi_ref) estimators, the two ways to use them, and KL coefficient controllers.

Shapes: B samples, R response tokens. ``logprobs`` and ``ref_logprobs`` (B, R) are the
per-token log-probabilities of the sampled tokens under the policy and the frozen reference
model; ``response_mask`` (B, R) is True/1 where a token counts. Padding (mask 0) never
influences a result or a gradient, whatever it holds (even NaN or inf).

With Delta = logprobs - ref_logprobs (Schulman, "Approximating KL Divergence", 2020,
http://joschu.net/blog/kl-approx.html; r = pi_ref / pi = exp(-Delta)):

| name | per-token estimate              |
|------|---------------------------------|
| k1   | Delta                           |
| k2   | Delta^2 / 2                     |
| k3   | exp(-Delta) - 1 + Delta         |

The estimate is used either as a loss term (GRPO, arXiv:2402.03300 eq. 3-4:
+ beta * agg(k), :func:`kl_loss`) or inside the reward (PPO / REINFORCE++,
arXiv:2501.03262: r_t -= beta * k_t, :func:`kl_in_reward`). The coefficient beta comes
from a controller: ``fixed`` or ``adaptive`` (Ziegler et al. 2019, arXiv:1909.08593).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import NamedTuple, Protocol

import torch
from torch import Tensor

from lightrft.domain import algorithm_registries
from lightrft.domain.aggregation import LossNormalizer, aggregate
from lightrft.domain.checks import check_non_negative, check_positive, check_token_tensor
from lightrft.domain.registry import Registry

LOG_RATIO_BOUND = 20.0
"""Delta is clamped to [-20, 20] before ``exp`` so one bad token cannot produce inf."""
K3_BOUND = 10.0
"""The k3 estimate is clamped to [-10, 10] (it is >= 0, so in effect to [0, 10])."""

KLEstimator = Callable[[Tensor, Tensor], Tensor]
"""``(logprobs (B, R), ref_logprobs (B, R)) -> per-token KL estimate (B, R)``."""

KL_ESTIMATORS: Registry[KLEstimator] = algorithm_registries.KL_ESTIMATORS


@KL_ESTIMATORS.register("k1")
def k1(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """Unbiased, high-variance estimate k1 = Delta (Schulman 2020). Shape: (B, R) -> (B, R)."""
    return logprobs - ref_logprobs


@KL_ESTIMATORS.register("k2")
def k2(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """Low-variance, biased estimate k2 = Delta^2 / 2 (Schulman 2020). Shape: (B, R) -> (B, R)."""
    delta = logprobs - ref_logprobs
    return 0.5 * delta * delta


@KL_ESTIMATORS.register("k3")
def k3(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """Unbiased, low-variance k3 = exp(-Delta) - 1 + Delta (Schulman 2020; GRPO eq. 4).

    Shape: (B, R) -> (B, R). Delta is clamped to [-20, 20] and the result to [-10, 10].
    ``expm1`` keeps the value exact near Delta = 0; the lower clamp is at 0 (instead of
    -10, which k3 >= 0 never reaches) to remove rounding noise of order 1e-8 there.
    """
    delta = (logprobs - ref_logprobs).clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    return (torch.expm1(-delta) + delta).clamp(0.0, K3_BOUND)


def kl_estimate(name: str, logprobs: Tensor, ref_logprobs: Tensor, response_mask: Tensor) -> Tensor:
    """Per-token KL estimate ``name`` (``k1``, ``k2`` or ``k3``), 0 on padding.

    Shape: logprobs, ref_logprobs, response_mask (B, R) -> (B, R). Padding is replaced by 0
    before the estimator runs, so NaN/inf there cannot reach the result or the gradient.
    """
    estimator = KL_ESTIMATORS.get(name)
    check_token_tensor("logprobs", logprobs, response_mask, ref_logprobs=ref_logprobs)
    keep = response_mask.bool()
    zeros = torch.zeros_like(logprobs)
    safe_logprobs = torch.where(keep, logprobs, zeros)
    safe_ref = torch.where(keep, ref_logprobs, zeros)
    return torch.where(keep, estimator(safe_logprobs, safe_ref), zeros)


def kl_in_reward(kl: Tensor, response_mask: Tensor, coef: float) -> Tensor:
    """Token-level reward penalty -coef * k_t (PPO / REINFORCE++, arXiv:2501.03262).

    Shape: kl, response_mask (B, R) -> (B, R), 0 on padding. Add it to the token rewards
    before the advantage estimator (ALGORITHMS.md, order of operations, step 2).
    """
    check_token_tensor("kl", kl, response_mask)
    check_non_negative("coef", coef)
    keep = response_mask.bool()
    return torch.where(keep, -coef * kl, torch.zeros_like(kl))


class KLLossOutput(NamedTuple):
    """``loss``: coef * agg(k), a scalar with gradient. ``metrics``: detached scalars.

    ``metrics["kl"]`` is agg(k) and ``metrics["kl_loss"]`` is the loss; with a global
    ``LossNormalizer`` both are this micro-batch's share, so they sum to the batch value.
    """

    loss: Tensor
    metrics: dict[str, Tensor]


def kl_loss(
    logprobs: Tensor,
    ref_logprobs: Tensor,
    response_mask: Tensor,
    estimator: str,
    coef: float,
    agg: str = "token-mean",
    normalizer: LossNormalizer | None = None,
) -> KLLossOutput:
    """KL penalty as a loss term, + coef * agg(k) (GRPO, arXiv:2402.03300 eq. 3).

    Shape: logprobs, ref_logprobs, response_mask (B, R) -> scalar loss. ``agg`` is an
    aggregation mode of :mod:`lightrft.domain.aggregation`; pass the global-batch
    ``normalizer`` so gradient accumulation over micro-batches and ranks is exact.
    """
    check_non_negative("coef", coef)
    k = kl_estimate(estimator, logprobs, ref_logprobs, response_mask)
    kl = aggregate(k, response_mask, agg, normalizer)
    loss = coef * kl
    return KLLossOutput(loss, {"kl": kl.detach(), "kl_loss": loss.detach()})


class KLController(Protocol):
    """A KL coefficient: ``value`` is beta now; ``update`` returns the next controller."""

    @property
    def value(self) -> float: ...

    def update(self, current_kl: float, n_steps: int) -> KLController: ...


def _check_update_args(current_kl: float, n_steps: int) -> None:
    if not math.isfinite(current_kl):
        raise ValueError(f"current_kl must be a finite number, got {current_kl}")
    if isinstance(n_steps, bool) or not isinstance(n_steps, int) or n_steps < 0:
        raise ValueError(f"n_steps must be a non-negative int, got {n_steps!r}")


@dataclass(frozen=True)
class FixedKLController:
    """beta stays ``value`` (>= 0) forever."""

    value: float

    def __post_init__(self) -> None:
        check_non_negative("value", self.value)

    def update(self, current_kl: float, n_steps: int) -> FixedKLController:
        """Returns ``self``; the arguments are validated like the adaptive controller's."""
        _check_update_args(current_kl, n_steps)
        return self


@dataclass(frozen=True)
class AdaptiveKLController:
    """Proportional controller of Ziegler et al. 2019 (arXiv:1909.08593).

    e = clip(KL / target - 1, -0.2, 0.2); beta <- beta * (1 + e * n / horizon), with n the
    number of samples seen since the last update. ``value`` (beta) must be > 0.
    """

    value: float
    target: float
    horizon: float

    def __post_init__(self) -> None:
        check_positive("value", self.value)
        check_positive("target", self.target)
        check_positive("horizon", self.horizon)

    def update(self, current_kl: float, n_steps: int) -> AdaptiveKLController:
        """The controller after observing mean KL ``current_kl`` over ``n_steps`` samples."""
        _check_update_args(current_kl, n_steps)
        error = min(max(current_kl / self.target - 1.0, -0.2), 0.2)
        factor = 1.0 + error * n_steps / self.horizon
        if factor <= 0:
            raise ValueError(
                f"n_steps={n_steps} is too large for horizon={self.horizon}: the update factor "
                f"1 + e * n_steps / horizon = {factor} would make the KL coefficient "
                "non-positive; use horizon > 5 * n_steps"
            )
        return replace(self, value=self.value * factor)


KLControllerFactory = Callable[[float, float | None, float | None], KLController]
"""``(init, target, horizon) -> controller``; ``fixed`` ignores target and horizon."""

KL_CONTROLLERS: Registry[KLControllerFactory] = algorithm_registries.KL_CONTROLLERS


@KL_CONTROLLERS.register("fixed")
def _fixed(init: float, target: float | None, horizon: float | None) -> KLController:
    return FixedKLController(init)


@KL_CONTROLLERS.register("adaptive")
def _adaptive(init: float, target: float | None, horizon: float | None) -> KLController:
    if target is None or horizon is None:
        raise ValueError(
            f"the 'adaptive' KL controller needs target and horizon, got target={target}, "
            f"horizon={horizon}"
        )
    return AdaptiveKLController(init, target, horizon)


def make_kl_controller(
    name: str, init: float, target: float | None = None, horizon: float | None = None
) -> KLController:
    """Builds controller ``name`` (``fixed`` or ``adaptive``) with initial beta ``init``."""
    return KL_CONTROLLERS.get(name)(init, target, horizon)
