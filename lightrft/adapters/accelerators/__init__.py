"""Accelerators: the ``Accelerator`` port for CUDA, Ascend NPU and CPU.

This package is the one place that names a device type. ``detect_accelerator()`` picks
the best available one (cuda > npu > cpu) or the one asked for by name.

The names below are imported from their modules on first use (PEP 562), so importing a
torch-free module of this package (``launcher_env``: the launcher's rank variables, read by
the CLI's logging setup) does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lightrft.adapters.accelerators.cpu import CpuAccelerator
    from lightrft.adapters.accelerators.cuda import CudaAccelerator
    from lightrft.adapters.accelerators.detect import (
        ACCELERATOR_NAMES,
        DeviceAccelerator,
        detect_accelerator,
    )
    from lightrft.adapters.accelerators.launcher_env import global_rank, local_rank
    from lightrft.adapters.accelerators.npu import NpuAccelerator

_HOMES = {
    "ACCELERATOR_NAMES": "detect",
    "CpuAccelerator": "cpu",
    "CudaAccelerator": "cuda",
    "DeviceAccelerator": "detect",
    "NpuAccelerator": "npu",
    "detect_accelerator": "detect",
    "global_rank": "launcher_env",
    "local_rank": "launcher_env",
}

__all__ = [
    "ACCELERATOR_NAMES",
    "CpuAccelerator",
    "CudaAccelerator",
    "DeviceAccelerator",
    "NpuAccelerator",
    "detect_accelerator",
    "global_rank",
    "local_rank",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
