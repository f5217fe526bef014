"""The client optimizer handed to ``deepspeed.initialize``.

AdamW with decoupled weight decay on matrices only (1-D biases and norm scales are not
decayed), as every LightRFT strategy. Without offload it is ``torch.optim.AdamW`` (ZeRO
shards its state; no DeepSpeed kernel has to be compiled); with ZeRO-Offload it is
DeepSpeed's ``DeepSpeedCPUAdam`` in AdamW mode, which steps the host-resident fp32 master
weights (its C++ kernel is compiled on first use and cached in ``TORCH_EXTENSIONS_DIR``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from lightrft.adapters.strategy_parts.adamw import adamw_param_groups
from lightrft.domain.types import OptimizerParams


def build_client_optimizer(
    params: Sequence[nn.Parameter], optim: OptimizerParams, *, cpu_offload: bool
) -> torch.optim.Optimizer:
    """torch AdamW, or DeepSpeedCPUAdam (AdamW mode) when ``cpu_offload``."""
    groups = adamw_param_groups(params, optim.weight_decay)
    if cpu_offload:
        from deepspeed.ops.adam import DeepSpeedCPUAdam

        return DeepSpeedCPUAdam(  # type: ignore[no-any-return]
            groups, lr=optim.lr, betas=optim.betas, eps=optim.eps, adamw_mode=True
        )
    return torch.optim.AdamW(groups, lr=optim.lr, betas=optim.betas, eps=optim.eps)
