"""AdamW over sharded parameters, global gradient norm and clipping across shards."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn
from torch.distributed.tensor import DTensor

from lightrft.domain.types import OptimizerParams


def build_adamw(params: Sequence[nn.Parameter], optim: OptimizerParams) -> torch.optim.AdamW:
    """AdamW with decoupled weight decay on matrices only (1-D biases and norm scales are
    not decayed); the fused kernel where the device has one, else the foreach one."""
    if not params:
        raise ValueError("the module has no parameter with requires_grad=True")
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    groups: list[dict[str, Any]] = [
        {"params": group, "weight_decay": wd}
        for group, wd in ((decay, optim.weight_decay), (no_decay, 0.0))
        if group
    ]
    kwargs: dict[str, Any] = {"lr": optim.lr, "betas": optim.betas, "eps": optim.eps}
    try:
        return torch.optim.AdamW(groups, fused=True, **kwargs)
    except (RuntimeError, ValueError):
        return torch.optim.AdamW(groups, foreach=True, **kwargs)


def total_grad_norm(params: Sequence[nn.Parameter]) -> Tensor:
    """L2 norm of all gradients of all ranks together: a replicated scalar tensor.

    Each rank holds a shard of every gradient; the per-shard norms are combined across
    ranks (``full_tensor`` of the partial norm), so every rank gets the same value.
    Collective: every rank must call it. 0 when no parameter has a gradient.
    """
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.zeros((), dtype=torch.float32)
    norm = torch.nn.utils.get_total_norm(grads, norm_type=2.0)
    if isinstance(norm, DTensor):
        norm = norm.full_tensor()
    return norm.float()


def clip_to_norm(params: Sequence[nn.Parameter], max_norm: float, total_norm: Tensor) -> None:
    """Scales every gradient by min(1, max_norm / (total_norm + 1e-6)) in place."""
    grads = [p for p in params if p.grad is not None]
    if grads:
        torch.nn.utils.clip_grads_with_norm_(grads, max_norm, total_norm)
