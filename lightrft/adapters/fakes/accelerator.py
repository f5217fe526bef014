"""``FakeAccelerator``: the ``Accelerator`` port for the CPU, counting calls."""

from __future__ import annotations

from lightrft.domain.types import MemoryStats


class FakeAccelerator:
    """Device type ``cpu``, backend ``gloo``, zero memory; records ``synchronize_calls``,
    ``empty_cache_calls`` and ``memory_stats_calls``."""

    device_type = "cpu"  # torch's device type
    collective_backend = "gloo"  # torch.distributed backend

    def __init__(self) -> None:
        self.synchronize_calls = 0
        self.empty_cache_calls = 0
        self.memory_stats_calls = 0

    def synchronize(self) -> None:
        """Nothing is queued on a CPU; counts the call."""
        self.synchronize_calls += 1

    def empty_cache(self) -> None:
        """No cache on a CPU; counts the call."""
        self.empty_cache_calls += 1

    def memory_stats(self) -> MemoryStats:
        """All zeros (the CPU cannot tell)."""
        self.memory_stats_calls += 1
        return MemoryStats()
