"""Accelerators: the ``Accelerator`` port for CUDA, Ascend NPU and CPU.

This package is the one place that names a device type. ``detect_accelerator()`` picks
the best available one (cuda > npu > cpu) or the one asked for by name.
"""

from lightrft.adapters.accelerators.cpu import CpuAccelerator
from lightrft.adapters.accelerators.cuda import CudaAccelerator
from lightrft.adapters.accelerators.detect import (
    ACCELERATOR_NAMES,
    DeviceAccelerator,
    detect_accelerator,
)
from lightrft.adapters.accelerators.launcher_env import global_rank, local_rank
from lightrft.adapters.accelerators.npu import NpuAccelerator

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
