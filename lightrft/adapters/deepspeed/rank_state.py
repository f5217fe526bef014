"""This rank's training state as plain tensors (``Strategy.state_dict``), and back.

A ZeRO optimizer's own ``state_dict`` holds, besides tensors, DeepSpeed objects (loss
scaler, fragment addresses, enums) that ``torch.load(weights_only=True)`` refuses. Only
its tensor parts change during training; the rest is fixed by the config. So this rank's
state keeps just those parts, and loading puts them into the freshly built optimizer's own
``state_dict`` and hands that back to DeepSpeed's ``load_state_dict``:

| stage | kept                                                                       |
|-------|----------------------------------------------------------------------------|
| 0     | the module's state, the client optimizer's ``state_dict``                   |
| 1, 2  | the module's state (replicated), base optimizer state, fp32 master partition |
| 3     | base optimizer state, fp32 master partitions (the parameters are rebuilt from them), buffers |

The result is per rank (each rank holds its own partition): load it on the same rank of a
run with the same world size and ZeRO stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor, nn

from lightrft.adapters.deepspeed.gather import is_partitioned

HOST = torch.device("cpu")
# Tensor-valued keys of the ZeRO optimizers' state_dict, by stage.
ZERO_TENSOR_KEYS = {
    1: ("base_optimizer_state", "single_partition_of_fp32_groups"),
    2: ("base_optimizer_state", "single_partition_of_fp32_groups"),
    3: ("optimizer_state_dict", "fp32_flat_groups"),
}


def to_host(value: Any) -> Any:
    """A copy of ``value`` with every tensor copied to host memory (nested dicts/lists)."""
    if isinstance(value, Tensor):
        return value.detach().to(HOST, copy=True)
    if isinstance(value, Mapping):
        return {key: to_host(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_host(item) for item in value)
    return value


def capture(
    module: nn.Module, optimizer: Any, *, zero_stage: int, layout: dict[str, int]
) -> dict[str, Any]:
    """This rank's state (host copies). ``optimizer``: the engine's (ZeRO) optimizer."""
    state: dict[str, Any] = {"layout": dict(layout)}
    if zero_stage == 0:
        state["module"] = to_host(module.state_dict())
        state["optimizer"] = to_host(optimizer.state_dict())
        return state
    full = optimizer.state_dict()
    state["zero"] = {key: to_host(full[key]) for key in ZERO_TENSOR_KEYS[zero_stage]}
    own = module.state_dict(keep_vars=True)
    state["module"] = {name: to_host(t) for name, t in own.items() if not is_partitioned(t)}
    return state


def restore(
    module: nn.Module,
    optimizer: Any,
    state: Mapping[str, Any],
    *,
    zero_stage: int,
    layout: dict[str, int],
    world_size: int,
) -> None:
    """Loads what :func:`capture` returned into the prepared module and optimizer."""
    saved_layout = dict(state["layout"])
    if saved_layout != layout:
        raise ValueError(
            f"this state was captured with {saved_layout}, this run is {layout}: DeepSpeed "
            "state_dict is per rank (use save_checkpoint/load_checkpoint, or the same layout)"
        )
    if zero_stage == 0:
        module.load_state_dict(state["module"])
        optimizer.load_state_dict(state["optimizer"])
        return
    current = optimizer.state_dict()
    current.update(state["zero"])
    # DeepSpeed reads entry [dp_rank] of the list: this rank's state at every position.
    optimizer.load_state_dict(
        [current] * world_size, load_optimizer_states=True, load_from_fp32_weights=True
    )
    result = module.load_state_dict(state["module"], strict=False)
    expected_missing = {
        name for name, t in module.state_dict(keep_vars=True).items() if is_partitioned(t)
    }
    if result.unexpected_keys or set(result.missing_keys) - expected_missing:
        raise ValueError(
            f"module state does not match: missing {result.missing_keys}, "
            f"unexpected {result.unexpected_keys}"
        )
