"""Applying FSDP2 (``fully_shard``) to a model: one group per transformer block, then the root.

Each group's parameters are all-gathered in one collective before its forward and freed
after it, so peak memory holds one block unsharded at a time. The blocks are the module
classes named by Hugging Face's ``_no_split_modules`` (e.g. ``LlamaDecoderLayer``) unless
the caller names them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import (
    CPUOffloadPolicy,
    MixedPrecisionPolicy,
    OffloadPolicy,
    fully_shard,
)

MixedPrecision = Literal["fp32", "bf16"]


def layer_class_names(module: nn.Module, names: Sequence[str] | None = None) -> tuple[str, ...]:
    """Class names of the blocks to shard one by one.

    ``names`` when given; else the ``_no_split_modules`` of the first submodule that has
    them (a PEFT or value-head wrapper keeps the HF model as a submodule).
    """
    if names is not None:
        return tuple(names)
    for sub in module.modules():
        found = getattr(sub, "_no_split_modules", None)
        if found:
            return tuple(found)
    raise ValueError(
        f"cannot tell the transformer blocks of {type(module).__name__}: it has no "
        "_no_split_modules; pass layer_classes=[...] (class names), or [] to shard the root only"
    )


def transformer_blocks(module: nn.Module, class_names: Sequence[str]) -> list[nn.Module]:
    """Submodules whose class name is in ``class_names``, outermost first, none nested.

    Raises if ``class_names`` is not empty and matches nothing (a typo would silently
    leave the model as a single group).
    """
    wanted = set(class_names)
    blocks: list[nn.Module] = []
    prefixes: list[str] = []
    for name, sub in module.named_modules():
        if not name or type(sub).__name__ not in wanted:
            continue
        if any(name.startswith(prefix) for prefix in prefixes):
            continue  # inside a block already chosen
        blocks.append(sub)
        prefixes.append(name + ".")
    if wanted and not blocks:
        raise ValueError(f"no submodule of {type(module).__name__} is one of {sorted(wanted)}")
    return blocks


def precision_policy(mixed_precision: MixedPrecision) -> MixedPrecisionPolicy:
    """fp32: no casting; bf16: bf16 compute and all-gathers, fp32 gradient reduction."""
    if mixed_precision == "fp32":
        return MixedPrecisionPolicy()
    if mixed_precision == "bf16":
        return MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    raise ValueError(f"mixed_precision must be 'fp32' or 'bf16', got {mixed_precision!r}")


def shard_model(
    module: nn.Module,
    mesh: DeviceMesh,
    *,
    layer_classes: Sequence[str],
    mixed_precision: MixedPrecision = "fp32",
    cpu_offload: bool = False,
    reshard_after_forward: bool = True,
) -> int:
    """``fully_shard`` on every block of ``layer_classes`` and then on ``module`` (in place).

    Parameters become ``DTensor`` s sharded on dim 0 over ``mesh``; with ``cpu_offload``
    the shards (and so the optimizer state) live in host memory. Returns the number of
    blocks sharded on their own.
    """
    precision = precision_policy(mixed_precision)
    offload = _offload_policy(cpu_offload, mesh)
    blocks = transformer_blocks(module, layer_classes)
    for target in [*blocks, module]:
        fully_shard(
            target,
            mesh=mesh,
            reshard_after_forward=reshard_after_forward,
            mp_policy=precision,
            offload_policy=offload,
        )
    return len(blocks)


def _offload_policy(cpu_offload: bool, mesh: DeviceMesh) -> OffloadPolicy:
    """Host-resident shards when asked; pinned memory only when there is a device to copy
    to (pinning needs an accelerator)."""
    if not cpu_offload:
        return OffloadPolicy()
    return CPUOffloadPolicy(pin_memory=mesh.device_type != "cpu")
