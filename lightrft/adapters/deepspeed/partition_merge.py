"""A full module state from the per-rank states of a DeepSpeed checkpoint, offline.

``DeepSpeedStrategy.state_dict`` (:mod:`rank_state`) keeps, per rank, the module's
unpartitioned tensors and the ZeRO optimizer's fp32 partitions. Under ZeRO 0-2 the module
state is complete on every rank. Under ZeRO-3 the parameters exist only as partitions: the
optimizer's flat fp32 groups hold, for each trainable parameter in optimizer order (the
groups of :func:`~lightrft.adapters.strategy_parts.adamw.adamw_param_groups`), a slice of
``ceil(numel / W)`` elements per rank (the last rank's padded); rank slices concatenated in
rank order and cut to ``numel`` are the parameter (as DeepSpeed's ``zero_to_fp32`` does).
Parameters are returned in the module's own dtype, as training stored them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from lightrft.adapters.strategy_parts.adamw import adamw_param_groups


def merge_zero_states(
    rank_states: Sequence[Mapping[str, Any]], module: nn.Module
) -> dict[str, Tensor]:
    """The full state of ``module`` (its names) from ``rank_states`` (ranks 0..W-1).

    ``module`` is the model as training built it before DeepSpeed (same trainable
    parameters, so the same optimizer order); its frozen parameters are not in the
    optimizer, and are left out under ZeRO-3 (the caller takes them from the model).
    """
    layout = dict(rank_states[0]["layout"])
    out = dict(rank_states[0]["module"])
    if layout["zero_stage"] != 3:
        return out
    world = len(rank_states)
    if layout["world_size"] != world:
        raise ValueError(f"the checkpoint has {layout['world_size']} ranks, {world} were read")
    flats = [torch.cat([g.flatten() for g in s["zero"]["fp32_flat_groups"]]) for s in rank_states]
    trainable = [p for p in module.parameters() if p.requires_grad]
    names = {id(p): n for n, p in module.named_parameters()}
    offset = 0
    for group in adamw_param_groups(trainable, 0.0):
        for param in group["params"]:
            part = -(-param.numel() // world)  # ceil
            pieces = [flat[offset : offset + part] for flat in flats]
            full = torch.cat(pieces)[: param.numel()].view(param.shape)
            out[names[id(param)]] = full.to(param.dtype)
            offset += part
    for name, tensor in module.state_dict(keep_vars=True).items():  # tied names
        owner = names.get(id(tensor))
        if owner is not None and owner != name and owner in out:
            out[name] = out[owner]
    return out
