"""``CpuAccelerator``: the ``Accelerator`` port for host-only runs (collectives over gloo).

Memory is the process's resident set, read from ``/proc/self/status`` (Linux):
``VmRSS`` (current) and ``VmHWM`` (peak, the "high water mark"). Elsewhere every field is 0.
"""

from __future__ import annotations

from pathlib import Path

import torch

from lightrft.domain.types import MemoryStats

PROC_STATUS = Path("/proc/self/status")


class CpuAccelerator:
    """Device type ``cpu``, collective backend ``gloo``."""

    device_type = "cpu"  # torch's device type
    collective_backend = "gloo"  # torch.distributed backend

    def __init__(self, status_file: Path = PROC_STATUS) -> None:
        self._status_file = status_file

    def device(self) -> torch.device:
        """The host: ``torch.device("cpu")`` for every local rank."""
        return torch.device("cpu")

    def synchronize(self) -> None:
        """Nothing is queued on the host; returns at once."""

    def empty_cache(self) -> None:
        """The host has no allocator cache to return."""

    def memory_stats(self) -> MemoryStats:
        """Resident set size now (``allocated`` and ``reserved``) and at its peak."""
        fields = read_status_kib(self._status_file)
        rss = fields.get("VmRSS", 0) * 1024
        peak = fields.get("VmHWM", 0) * 1024
        return MemoryStats(allocated=rss, reserved=rss, peak_allocated=max(peak, rss))


def read_status_kib(path: Path) -> dict[str, int]:
    """``{"VmRSS": kib, ...}`` from a ``/proc/<pid>/status`` file ({} when unreadable)."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    fields: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            fields[key.strip()] = int(parts[0])
    return fields
