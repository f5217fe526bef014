"""``DeviceModuleAccelerator``: what the accelerators of torch's device modules share
(``torch.cuda``, ``torch.npu``: the same calls on another module), one device per process."""

from __future__ import annotations

from typing import Any

import torch

from lightrft.domain.types import MemoryStats


class DeviceModuleAccelerator:
    """The ``Accelerator`` port over ``module`` (a torch device module), on its device
    ``index``; a subclass checks the device and names ``device_type`` and
    ``collective_backend``."""

    device_type: str  # torch's device type
    collective_backend: str  # torch.distributed backend

    def __init__(self, module: Any, index: int) -> None:
        self._module = module
        self._index = index

    def device(self) -> torch.device:
        """``<device_type>:<index>``, this process's device."""
        return torch.device(self.device_type, self._index)

    def synchronize(self) -> None:
        """Waits for all work queued on this process's device."""
        self._module.synchronize(self._index)

    def empty_cache(self) -> None:
        """Returns the caching allocator's free blocks to the driver."""
        self._module.empty_cache()

    def memory_stats(self) -> MemoryStats:
        """Allocated, reserved and peak-allocated bytes of this process's device."""
        return MemoryStats(
            allocated=int(self._module.memory_allocated(self._index)),
            reserved=int(self._module.memory_reserved(self._index)),
            peak_allocated=int(self._module.max_memory_allocated(self._index)),
        )
