"""``NpuAccelerator``: the ``Accelerator`` port for Ascend NPUs, over HCCL.

``torch_npu`` is imported when the accelerator is built, never at module import, so this
module loads on machines without it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import torch

from lightrft.adapters.accelerators.device_module import DeviceModuleAccelerator
from lightrft.adapters.accelerators.launcher_env import local_rank


def npu_available() -> bool:
    """Whether ``torch_npu`` imports and sees at least one NPU."""
    try:
        importlib.import_module("torch_npu")
    except ImportError:
        return False
    npu: Any = getattr(torch, "npu", None)
    return bool(npu is not None and npu.is_available())


class NpuAccelerator(DeviceModuleAccelerator):
    """One Ascend NPU per process: ``npu:LOCAL_RANK`` (``index`` overrides the local rank)."""

    device_type = "npu"
    collective_backend = "hccl"

    def __init__(self, index: int | None = None) -> None:
        try:
            importlib.import_module("torch_npu")
        except ImportError as exc:
            raise RuntimeError(
                "NpuAccelerator needs torch_npu (pip install 'lightrft[npu]')"
            ) from exc
        npu: ModuleType = torch.npu  # type: ignore[attr-defined]
        if not npu.is_available():
            raise RuntimeError("NpuAccelerator: torch_npu is installed but sees no NPU")
        super().__init__(npu, local_rank() if index is None else index)
