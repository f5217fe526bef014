"""Statistics over groups of samples that share a prompt.

Shapes: B samples. ``group_index`` (B,) holds any integer id per prompt; samples with the
same id form a group (they need not be contiguous).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from lightrft.domain.checks import check_shape


class GroupStats(NamedTuple):
    """Per-sample view of its group's statistics, each of shape (B,)."""

    mean: Tensor
    std: Tensor  # Bessel-corrected; 0 for a group of one
    size: Tensor  # number of samples in the group (float)


def dense_group_ids(group_index: Tensor) -> tuple[Tensor, int]:
    """Maps arbitrary group ids to 0..K-1. Returns (ids (B,), K)."""
    check_shape("group_index", group_index, (None,))
    _, ids = torch.unique(group_index, return_inverse=True)
    return ids, int(ids.max()) + 1 if ids.numel() else 0


def groups_all_equal(values: Tensor, ids: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Per group (K,): whether all its ``values`` are equal, and its lowest value.
    ``ids`` (B,) are dense group ids 0..K-1 (:func:`dense_group_ids`)."""
    dtype = values.dtype
    low = torch.full((k,), float("inf"), dtype=dtype, device=values.device).scatter_reduce(
        0, ids, values, reduce="amin"
    )
    high = torch.full((k,), float("-inf"), dtype=dtype, device=values.device).scatter_reduce(
        0, ids, values, reduce="amax"
    )
    return low == high, low


def alike_group_fraction(values: Tensor, group_index: Tensor) -> Tensor | None:
    """The fraction of groups of two or more samples whose ``values`` (e.g. each sample's
    reward) are all equal: the prompts a group baseline learns nothing from, whatever the
    estimator. Groups of one sample are left out; ``None`` when every group has one.
    Shape: values (B,), group_index (B,) -> 0-dim float tensor."""
    check_shape("values", values, (None,))
    check_shape("group_index", group_index, (values.shape[0],))
    ids, k = dense_group_ids(group_index)
    v = values if values.is_floating_point() else values.float()
    size = torch.zeros(k, device=v.device).index_add_(
        0, ids, torch.ones_like(v, dtype=torch.float32)
    )
    several = size > 1
    if not bool(several.any()):
        return None
    equal, _ = groups_all_equal(v, ids, k)
    return (equal & several).float().sum() / several.float().sum()


def group_stats(values: Tensor, group_index: Tensor, weights: Tensor | None = None) -> GroupStats:
    """Mean and Bessel-corrected std of ``values`` within each group, broadcast back to (B,).

    Shape: values (B,), group_index (B,), weights (B,) optional. With ``weights`` the mean
    is the weighted mean sum w v / sum w (the std stays unweighted).
    """
    check_shape("values", values, (None,))
    check_shape("group_index", group_index, (values.shape[0],))
    ids, k = dense_group_ids(group_index)
    dtype = values.dtype if values.is_floating_point() else torch.float32
    v = values.to(dtype)
    size = torch.zeros(k, dtype=dtype, device=v.device).index_add_(0, ids, torch.ones_like(v))
    if weights is None:
        w = torch.ones_like(v)
    else:
        check_shape("weights", weights, (values.shape[0],))
        w = weights.to(dtype)
    wsum = torch.zeros(k, dtype=dtype, device=v.device).index_add_(0, ids, w)
    mean = torch.zeros(k, dtype=dtype, device=v.device).index_add_(0, ids, w * v)
    mean = mean / wsum.clamp(min=torch.finfo(dtype).tiny)
    plain_mean = torch.zeros(k, dtype=dtype, device=v.device).index_add_(0, ids, v) / size
    dev = (v - plain_mean[ids]) ** 2
    var = torch.zeros(k, dtype=dtype, device=v.device).index_add_(0, ids, dev) / (size - 1).clamp(
        min=1
    )
    # A group whose values are all equal has exactly that mean and std 0: float rounding of
    # the sums above must not turn it into a tiny non-zero spread (ALGORITHMS.md: equal
    # rewards give advantage 0).
    equal, low = groups_all_equal(v, ids, k)
    mean = torch.where(equal, low, mean)
    std = torch.where(equal, torch.zeros_like(var), var.sqrt())
    return GroupStats(mean=mean[ids], std=std[ids], size=size[ids])


def zero_group_fraction(values: Tensor, response_mask: Tensor, group_index: Tensor) -> Tensor:
    """The fraction of groups whose ``values`` are exactly 0 at every masked token.

    For advantages: the groups the update learns nothing from (e.g. every sample of the
    prompt got the same reward). Shape: values (B, R), response_mask (B, R), group_index
    (B,) -> 0-dim float tensor (0 for an empty batch).
    """
    check_shape("values", values, (None, None))
    check_shape("response_mask", response_mask, tuple(values.shape))
    check_shape("group_index", group_index, (values.shape[0],))
    ids, k = dense_group_ids(group_index)
    if k == 0:
        return torch.zeros(())
    nonzero = ((values != 0) & response_mask.bool()).any(dim=-1)  # [B]
    learning = torch.zeros(k, dtype=torch.long, device=values.device).scatter_reduce(
        0, ids.to(values.device), nonzero.long(), reduce="amax"
    )  # [K] 1 where some sample of the group has a non-zero value
    return (learning == 0).float().mean()
