"""``CudaAccelerator``: the ``Accelerator`` port for NVIDIA (and ROCm) GPUs, over NCCL."""

from __future__ import annotations

import torch

from lightrft.adapters.accelerators.launcher_env import local_rank
from lightrft.domain.types import MemoryStats


class CudaAccelerator:
    """One CUDA device per process: ``cuda:LOCAL_RANK``.

    Args:
        index: device index; ``None`` takes the local rank (``LOCAL_RANK``, 0 outside
            ``torchrun``).
    """

    device_type = "cuda"  # torch's device type
    collective_backend = "nccl"  # torch.distributed backend

    def __init__(self, index: int | None = None) -> None:
        if not torch.cuda.is_available():
            raise RuntimeError("CudaAccelerator: CUDA is not available on this machine")
        self._index = local_rank() if index is None else index
        count = torch.cuda.device_count()
        if not 0 <= self._index < count:
            raise RuntimeError(
                f"CudaAccelerator: device index {self._index} but only {count} CUDA device(s)"
            )

    def device(self) -> torch.device:
        """``cuda:<index>``, this process's GPU."""
        return torch.device("cuda", self._index)

    def synchronize(self) -> None:
        """Waits for all kernels queued on this process's GPU."""
        torch.cuda.synchronize(self._index)

    def empty_cache(self) -> None:
        """Returns the caching allocator's free blocks to the driver."""
        torch.cuda.empty_cache()

    def memory_stats(self) -> MemoryStats:
        """Allocated, reserved and peak-allocated bytes of this process's GPU."""
        return MemoryStats(
            allocated=int(torch.cuda.memory_allocated(self._index)),
            reserved=int(torch.cuda.memory_reserved(self._index)),
            peak_allocated=int(torch.cuda.max_memory_allocated(self._index)),
        )
