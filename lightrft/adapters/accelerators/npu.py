"""``NpuAccelerator``: the ``Accelerator`` port for Ascend NPUs, over HCCL.

``torch_npu`` is imported when the accelerator is built, never at module import, so this
module loads on machines without it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import torch

from lightrft.adapters.accelerators.launcher_env import local_rank
from lightrft.domain.types import MemoryStats


def npu_available() -> bool:
    """Whether ``torch_npu`` imports and sees at least one NPU."""
    try:
        importlib.import_module("torch_npu")
    except ImportError:
        return False
    npu: Any = getattr(torch, "npu", None)
    return bool(npu is not None and npu.is_available())


class NpuAccelerator:
    """One Ascend NPU per process: ``npu:LOCAL_RANK`` (``index`` overrides the local rank)."""

    device_type = "npu"  # torch's device type
    collective_backend = "hccl"  # torch.distributed backend

    def __init__(self, index: int | None = None) -> None:
        try:
            importlib.import_module("torch_npu")
        except ImportError as exc:
            raise RuntimeError(
                "NpuAccelerator needs torch_npu (pip install 'lightrft[npu]')"
            ) from exc
        self._npu: ModuleType = torch.npu  # type: ignore[attr-defined]
        if not self._npu.is_available():
            raise RuntimeError("NpuAccelerator: torch_npu is installed but sees no NPU")
        self._index = local_rank() if index is None else index

    def device(self) -> torch.device:
        """``npu:<index>``, this process's NPU."""
        return torch.device("npu", self._index)

    def synchronize(self) -> None:
        """Waits for all work queued on this process's NPU."""
        self._npu.synchronize(self._index)

    def empty_cache(self) -> None:
        """Returns cached NPU memory to the driver."""
        self._npu.empty_cache()

    def memory_stats(self) -> MemoryStats:
        """Allocated, reserved and peak-allocated bytes of this process's NPU."""
        return MemoryStats(
            allocated=int(self._npu.memory_allocated(self._index)),
            reserved=int(self._npu.memory_reserved(self._index)),
            peak_allocated=int(self._npu.max_memory_allocated(self._index)),
        )
