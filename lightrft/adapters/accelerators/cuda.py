"""``CudaAccelerator``: the ``Accelerator`` port for NVIDIA (and ROCm) GPUs, over NCCL."""

from __future__ import annotations

import torch

from lightrft.adapters.accelerators.device_module import DeviceModuleAccelerator
from lightrft.adapters.accelerators.launcher_env import local_rank


class CudaAccelerator(DeviceModuleAccelerator):
    """One CUDA device per process: ``cuda:LOCAL_RANK``.

    Args:
        index: device index; ``None`` takes the local rank (``LOCAL_RANK``, 0 outside
            ``torchrun``).
    """

    device_type = "cuda"
    collective_backend = "nccl"

    def __init__(self, index: int | None = None) -> None:
        if not torch.cuda.is_available():
            raise RuntimeError("CudaAccelerator: CUDA is not available on this machine")
        index = local_rank() if index is None else index
        count = torch.cuda.device_count()
        if not 0 <= index < count:
            raise RuntimeError(
                f"CudaAccelerator: device index {index} but only {count} CUDA device(s)"
            )
        super().__init__(torch.cuda, index)
