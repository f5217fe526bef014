"""AdamW as every training strategy builds it: decoupled weight decay on matrices only.

Parameters with two or more dimensions (weight matrices, embeddings) decay at
``OptimizerParams.weight_decay``; 1-D ones (biases, norm scales) do not decay. The
single-device and FSDP2 strategies step :func:`build_adamw`; DeepSpeed hands
:func:`adamw_param_groups` to its own (possibly CPU-offloaded) AdamW.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from lightrft.domain.types import OptimizerParams


def adamw_param_groups(params: Sequence[nn.Parameter], weight_decay: float) -> list[dict[str, Any]]:
    """Two groups, matrices (``weight_decay``) then 1-D tensors (0.0); empty ones dropped.

    ``params`` are the trainable parameters (local shards under FSDP2: a shard keeps its
    parameter's number of dimensions). Raises ``ValueError`` when there are none.
    """
    if not params:
        raise ValueError("the module has no parameter with requires_grad=True")
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    return [
        {"params": group, "weight_decay": wd}
        for group, wd in ((decay, weight_decay), (no_decay, 0.0))
        if group
    ]


def build_adamw(params: Sequence[nn.Parameter], optim: OptimizerParams) -> torch.optim.AdamW:
    """``torch.optim.AdamW`` over :func:`adamw_param_groups` with ``optim``'s lr, betas and
    eps; the fused kernel where the device has one, else the foreach one."""
    groups = adamw_param_groups(params, optim.weight_decay)
    kwargs: dict[str, Any] = {"lr": optim.lr, "betas": optim.betas, "eps": optim.eps}
    try:
        return torch.optim.AdamW(groups, fused=True, **kwargs)
    except (RuntimeError, ValueError):
        return torch.optim.AdamW(groups, foreach=True, **kwargs)
