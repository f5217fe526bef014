"""A full module state from the per-rank shards of an FSDP2 checkpoint, offline.

``Fsdp2Strategy.state_dict`` saves each rank's local shards (plain tensors). ``fully_shard``
splits every parameter along dim 0 as ``torch.chunk`` does, rank r holding chunk r (empty
when there are fewer chunks than ranks), so the rank shards concatenated in rank order are
the parameter. Buffers are not sharded: every rank holds them whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor

from lightrft.adapters.fsdp.gather import clean_name


def merge_fsdp2_shards(
    rank_modules: Sequence[Mapping[str, Tensor]], shapes: Mapping[str, torch.Size]
) -> dict[str, Tensor]:
    """The full state (clean HF names) of ``rank_modules``, the ``"module"`` states of ranks
    0..W-1. ``shapes``: the full shape of each name (from the model); an entry whose rank-0
    shard already has it is replicated and taken from rank 0. Raises ``ValueError`` when the
    concatenated shards do not make the full shape."""
    if not rank_modules:
        raise ValueError("no rank states to merge")
    out: dict[str, Tensor] = {}
    for name, first in rank_modules[0].items():
        key = clean_name(name)
        shape = shapes.get(key)
        if shape is None or first.shape == shape:
            out[key] = first
            continue
        full = torch.cat([state[name] for state in rank_modules], dim=0)
        if full.shape != shape:
            raise ValueError(
                f"{key}: the shards of {len(rank_modules)} ranks make {tuple(full.shape)}, the "
                f"model has {tuple(shape)}; the checkpoint is not of this model"
            )
        out[key] = full
    return out
