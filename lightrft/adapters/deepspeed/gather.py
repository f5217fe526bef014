"""Full parameters of a DeepSpeed-trained module, one tensor at a time.

Under ZeRO 0-2 every rank holds every parameter; under ZeRO-3 each rank holds 1/W of each
(the module's own ``param.data`` is empty outside a forward), and a parameter is all-gathered
with ``deepspeed.zero.GatheredParameters`` only for as long as it takes to copy it.
Buffers are never partitioned.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor, nn


def is_partitioned(tensor: Tensor) -> bool:
    """Whether ``tensor`` is a ZeRO-3 parameter (it carries DeepSpeed's ``ds_id``)."""
    return hasattr(tensor, "ds_id")


def full_state(module: nn.Module, *, device: torch.device) -> Iterator[tuple[str, Tensor]]:
    """(name, full tensor) for every entry of ``module.state_dict()``, in its order.

    Names are the module's own (Hugging Face names: DeepSpeed wraps nothing). A tied
    parameter appears under each of its names, as in ``state_dict``. Tensors are detached;
    ZeRO-3 parameters are fresh copies on ``device``, the others the module's own
    storage. Collective under ZeRO-3: every rank must exhaust the iterator.
    """
    for name, value in module.state_dict(keep_vars=True).items():
        if is_partitioned(value):
            yield name, _gathered_copy(value, device)
        else:
            yield name, value.detach()


def _gathered_copy(param: Tensor, device: torch.device) -> Tensor:
    """A full copy of ZeRO-3 parameter ``param`` (collective: all ranks gather it)."""
    import deepspeed

    with deepspeed.zero.GatheredParameters([param], modifier_rank=None):
        return param.detach().to(device, copy=True)


def export_state(module: nn.Module, *, device: torch.device, is_main: bool) -> dict[str, Tensor]:
    """The full state in host memory on the main rank, ``{}`` elsewhere (collective)."""
    host = torch.device("cpu")
    exported: dict[str, Tensor] = {}
    for name, tensor in full_state(module, device=device):
        if is_main:
            exported[name] = tensor.to(host, copy=True)
    return exported
