"""Masked reductions over response-aligned tensors.

Shapes: B samples, R response tokens. A mask is True/1 where the token counts; padding
(mask 0) never influences a result, whatever value it holds (even NaN or inf).
"""

from __future__ import annotations

import torch
from torch import Tensor

from lightrft.domain.checks import check_mask, check_same_shape
from lightrft.domain.reduce import AllReduceSum, local_sum


def masked_sum(values: Tensor, mask: Tensor, dim: int | None = None) -> Tensor:
    """Sum of ``values`` where ``mask`` is set. Shape: values, mask (B, R)."""
    check_same_shape("values", values, mask=mask)
    kept = torch.where(mask.bool(), values, torch.zeros_like(values))
    return kept.sum() if dim is None else kept.sum(dim=dim)


def masked_mean(values: Tensor, mask: Tensor, dim: int | None = None) -> Tensor:
    """Mean of ``values`` over masked positions; rows with an empty mask give 0.

    Shape: values, mask (B, R). ``dim=None`` averages every masked token (an all-zero mask
    is an error there); ``dim=-1`` gives one mean per row, shape (B,).
    """
    if dim is None:
        check_mask("mask", mask)
        return masked_sum(values, mask) / mask.sum()
    count = mask.sum(dim=dim)
    return masked_sum(values, mask, dim=dim) / count.clamp(min=1)


def masked_whiten(
    values: Tensor,
    mask: Tensor,
    *,
    eps: float = 1e-8,
    shift_mean: bool = True,
    all_reduce_sum: AllReduceSum = local_sum,
) -> Tensor:
    """(v - mu) / sqrt(var + eps) with mu, var over masked tokens of the global batch.

    Shape: values, mask (B, R). The variance uses Bessel's correction; mean and variance are
    summed over data-parallel ranks with ``all_reduce_sum`` so every rank whitens with the
    same global statistics. Masked-out positions come back as 0. With ``shift_mean=False``
    the mean is added back (scale-only whitening).
    """
    check_same_shape("values", values, mask=mask)
    m = mask.to(values.dtype)
    kept = torch.where(mask.bool(), values, torch.zeros_like(values))
    totals = all_reduce_sum(torch.stack([kept.sum(), m.sum()]))
    total, count = totals[0], totals[1]
    if float(count) < 1:
        raise ValueError("mask selects no token on any rank; cannot whiten")
    mean = total / count
    squares = all_reduce_sum(((kept - mean) ** 2 * m).sum())
    var = squares / (count - 1).clamp(min=1)
    whitened = (kept - mean) * torch.rsqrt(var + eps)
    if not shift_mean:
        whitened = whitened + mean
    return whitened * m
