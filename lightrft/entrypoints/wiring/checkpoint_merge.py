"""How a checkpoint's per-rank strategy states become one full module state, per training
strategy (``backend.strategy.type``): the registry ``lightrft checkpoints export`` uses.

A merger is ``(rank_states, module) -> state``: ``rank_states`` the strategy states of
ranks 0..W-1 (one for ``single``), ``module`` the policy's module as training built it
before the strategy wrapped it (names, shapes, order of trainable parameters); the result
maps the module's ``state_dict`` names to full tensors (frozen parameters may be left out).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from torch import Tensor, nn

from lightrft.domain.registry import Registry

Merger = Callable[[Sequence[Mapping[str, Any]], nn.Module], dict[str, Tensor]]
CHECKPOINT_MERGERS: Registry[Merger] = Registry("training strategy")


@CHECKPOINT_MERGERS.register("single")
def merge_single(rank_states: Sequence[Mapping[str, Any]], module: nn.Module) -> dict[str, Tensor]:
    """One device: the saved module state is the whole state."""
    return dict(rank_states[0]["module"])


@CHECKPOINT_MERGERS.register("fsdp2")
def merge_fsdp2(rank_states: Sequence[Mapping[str, Any]], module: nn.Module) -> dict[str, Tensor]:
    """FSDP2: dim-0 shards concatenated in rank order."""
    from lightrft.adapters.fsdp.shard_merge import merge_fsdp2_shards

    shapes = {name: tensor.shape for name, tensor in module.state_dict().items()}
    return merge_fsdp2_shards([state["module"] for state in rank_states], shapes)


@CHECKPOINT_MERGERS.register("deepspeed")
def merge_deepspeed(
    rank_states: Sequence[Mapping[str, Any]], module: nn.Module
) -> dict[str, Tensor]:
    """DeepSpeed ZeRO 0-3: the module state, ZeRO-3 parameters from the fp32 partitions."""
    from lightrft.adapters.deepspeed.partition_merge import merge_zero_states

    return merge_zero_states(rank_states, module)
