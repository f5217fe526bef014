"""Critic loss (PPO clipped value loss) and the entropy bonus.

Shapes: B samples, R response tokens. Every tensor is (B, R); ``response_mask`` is 1/True where
a token counts, and padding (mask 0) never influences a loss, a gradient or a metric, whatever
value it holds (even NaN or inf). Reduction uses the aggregation modes of
:mod:`lightrft.domain.aggregation` with a global :class:`LossNormalizer`, so micro-batches
accumulate to the full-batch gradient.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import torch
from torch import Tensor

from lightrft.domain.aggregation import LossNormalizer, aggregate
from lightrft.domain.checks import (
    check_finite,
    check_non_negative,
    check_positive,
    check_same_shape,
    check_token_tensor,
)
from lightrft.domain.masked import masked_mean


class ValueLossOutput(NamedTuple):
    """``loss``: 0-dim; ``metrics``: detached local (micro-batch) means, keyed ``value/...``."""

    loss: Tensor
    metrics: Mapping[str, Tensor]


def _kept(name: str, tensor: Tensor, mask: Tensor) -> Tensor:
    """``tensor`` with padding set to 0 (gradient 0 there); refuses non-finite masked values."""
    kept = torch.where(mask, tensor, torch.zeros_like(tensor))
    check_finite(name, kept.detach())
    return kept


def _checked_mask(reference_name: str, reference: Tensor, response_mask: Tensor) -> Tensor:
    check_token_tensor(reference_name, reference, response_mask)
    return response_mask.bool()


def value_loss(
    values: Tensor,
    old_values: Tensor,
    returns: Tensor,
    response_mask: Tensor,
    clip_eps: float | None,
    agg: str = "token-mean",
    normalizer: LossNormalizer | None = None,
) -> ValueLossOutput:
    """PPO value loss 0.5 * max((V - R)^2, (clip(V, V_old - eps, V_old + eps) - R)^2).

    Shape: values (carries grad), old_values, returns, response_mask (B, R); loss 0-dim.
    ``clip_eps`` None gives the plain 0.5 * (V - R)^2. ``agg`` is an aggregation mode;
    ``normalizer`` None treats the micro-batch as the global batch. Schulman et al.,
    arXiv:1707.06347 Eq. (9) (squared-error value term); value clipping as in the OpenAI
    baselines PPO, catalogued by Engstrom et al., arXiv:2005.12729.
    Metrics: ``value/clip_fraction``, ``value/values_mean``, ``value/mse``.
    """
    mask = _checked_mask("values", values, response_mask)
    check_same_shape("values", values, old_values=old_values, returns=returns)
    if clip_eps is not None:
        check_positive("clip_eps", clip_eps)
    v = _kept("values", values, mask)
    v_old = _kept("old_values", old_values, mask)
    target = _kept("returns", returns, mask)
    squared = (v - target) ** 2
    loss = squared
    clipped_frac = torch.zeros((), dtype=v.dtype, device=v.device)
    if clip_eps is not None:
        v_clipped = v_old + (v - v_old).clamp(-clip_eps, clip_eps)
        squared_clipped = (v_clipped - target) ** 2
        loss = torch.maximum(squared, squared_clipped)
        clipped_frac = masked_mean((squared_clipped > squared).to(v.dtype), mask)
    total = aggregate(0.5 * loss, mask, agg, normalizer)
    metrics = {
        "value/clip_fraction": clipped_frac,
        "value/values_mean": masked_mean(v, mask),
        "value/mse": masked_mean(squared, mask),
    }
    return ValueLossOutput(total, {k: t.detach() for k, t in metrics.items()})


def entropy_loss(
    entropy: Tensor,
    response_mask: Tensor,
    coef: float,
    agg: str = "token-mean",
    normalizer: LossNormalizer | None = None,
) -> Tensor:
    """Entropy bonus as a loss term: -coef * agg(H). Minimizing it maximizes entropy.

    Shape: entropy (B, R) (H_t of the token distribution, carries grad), response_mask (B, R);
    returns 0-dim. ``coef`` >= 0. Entropy regularization of Williams & Peng (1991) and PPO,
    arXiv:1707.06347 Eq. (9) (the c_2 S[pi] term).
    """
    mask = _checked_mask("entropy", entropy, response_mask)
    check_non_negative("coef", coef)
    return -coef * aggregate(_kept("entropy", entropy, mask), mask, agg, normalizer)
