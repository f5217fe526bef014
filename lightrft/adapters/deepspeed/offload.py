"""Moving a DeepSpeed engine's training state to host memory and back (colocation).

ZeRO 1-3 use DeepSpeed's ``engine.offload_states`` / ``engine.reload_states`` for the
buffers only DeepSpeed knows: the low-precision parameters, their gradient partitions, the
gradient bucket, and under ZeRO 1-2 the fp32 master partitions (which DeepSpeed re-links
to the parameters on reload). The client optimizer's state is moved here, back to exactly
where each tensor was: DeepSpeed's own reload would put every state tensor on the
accelerator, torch AdamW's host-side ``step`` counters included, and ZeRO-3's own offload
of the state and master partitions accepts only DeepSpeed's FusedAdam, so under ZeRO-3
the master partitions (the tensors the state is keyed by) are moved here too. Tensors are
moved by swapping ``tensor.data``, so every reference to them stays valid. With
ZeRO-Offload (``cpu_offload``) master weights and state already live in host memory and
stay there. Stage 0 moves the module and the optimizer state like a plain torch model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

HOST = torch.device("cpu")
Placement = dict[tuple[int, str], torch.device]  # (id(keying tensor), state key) -> device
PARAM_KEY = ""  # the placement key of the keying tensor itself


def _deepspeed_kinds(zero_stage: int, cpu_offload: bool) -> list[Any]:
    """The ``OffloadStateTypeEnum`` members DeepSpeed moves for this setup."""
    from deepspeed.runtime.zero.offload_config import OffloadStateTypeEnum as Kind

    kinds = [Kind.lp_params, Kind.lp_grads, Kind.contiguous_grad_buffer]
    if zero_stage in (1, 2) and not cpu_offload:
        kinds.append(Kind.hp_params)
    return kinds


def offload_engine(
    engine: Any,
    client_optimizer: torch.optim.Optimizer,
    *,
    zero_stage: int,
    cpu_offload: bool,
    pin_memory: bool,
) -> Placement:
    """Moves the engine's state to host memory (see the module docstring).

    Returns where the tensors moved here were, for :func:`onload_engine`.
    """
    if zero_stage == 0:
        engine.module.to(HOST)
    else:
        from deepspeed.runtime.zero.offload_config import OffloadDeviceEnum

        engine.offload_states(
            include=_deepspeed_kinds(zero_stage, cpu_offload),
            device=OffloadDeviceEnum.cpu,
            pin_memory=pin_memory,
        )
    if cpu_offload:
        return {}
    return _move_optimizer(client_optimizer, lambda key: HOST, with_params=zero_stage == 3)


def onload_engine(
    engine: Any,
    client_optimizer: torch.optim.Optimizer,
    placement: Placement,
    *,
    zero_stage: int,
    device: torch.device,
) -> None:
    """Brings back what :func:`offload_engine` moved (``placement``: what it returned)."""
    if zero_stage == 0:
        module: nn.Module = engine.module
        module.to(device)
    else:
        engine.reload_states()
    if placement:
        _move_optimizer(client_optimizer, placement.__getitem__, with_params=zero_stage == 3)


def _move_optimizer(
    optimizer: torch.optim.Optimizer,
    where: Callable[[tuple[int, str]], torch.device],
    *,
    with_params: bool,
) -> Placement:
    """Moves each state tensor to ``where((id(keying tensor), key))`` (and, ``with_params``,
    the keying tensor itself, key :data:`PARAM_KEY`); returns where they were."""
    before: Placement = {}
    for param, state in optimizer.state.items():
        tensors = [(key, value) for key, value in state.items() if isinstance(value, torch.Tensor)]
        if with_params and isinstance(param, torch.Tensor):
            tensors.append((PARAM_KEY, param))
        for key, tensor in tensors:
            before[(id(param), key)] = tensor.device
            tensor.data = tensor.data.to(where((id(param), key)))
    return before
