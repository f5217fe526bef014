"""Global gradient norm and clipping across the shards of FSDP2 parameters."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch.distributed.tensor import DTensor


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
