"""Choosing the accelerator: auto-detection (cuda > npu > cpu) or by name."""

from __future__ import annotations

from collections.abc import Callable

import torch

from lightrft.adapters.accelerators.cpu import CpuAccelerator
from lightrft.adapters.accelerators.cuda import CudaAccelerator
from lightrft.adapters.accelerators.npu import NpuAccelerator, npu_available

DeviceAccelerator = CudaAccelerator | NpuAccelerator | CpuAccelerator
ACCELERATOR_NAMES: tuple[str, ...] = ("cuda", "npu", "cpu")


def _cuda_available() -> bool:
    return bool(torch.cuda.is_available() and torch.cuda.device_count() > 0)


_PROBES: dict[str, Callable[[], bool]] = {
    "cuda": _cuda_available,
    "npu": npu_available,
    "cpu": lambda: True,
}
_BUILDERS: dict[str, Callable[[], DeviceAccelerator]] = {
    "cuda": CudaAccelerator,
    "npu": NpuAccelerator,
    "cpu": CpuAccelerator,
}


def detect_accelerator(preferred: str | None = None) -> DeviceAccelerator:
    """The accelerator of this process, bound to the local rank's device.

    ``preferred=None`` (or ``"auto"``) takes the first available of cuda, npu, cpu; a name
    asks for that one and raises ``RuntimeError`` if it is absent (``ValueError`` for an
    unknown name).
    """
    if preferred is None or preferred.lower() == "auto":
        name = next(n for n in ACCELERATOR_NAMES if _PROBES[n]())
        return _BUILDERS[name]()
    name = preferred.lower()
    if name not in _PROBES:
        raise ValueError(
            f"unknown accelerator {preferred!r}; choose one of {', '.join(ACCELERATOR_NAMES)}"
            " or 'auto'"
        )
    if not _PROBES[name]():
        found = [n for n in ACCELERATOR_NAMES if _PROBES[n]()]
        raise RuntimeError(
            f"accelerator {name!r} was asked for but is not available on this machine "
            f"(available: {', '.join(found)})"
        )
    return _BUILDERS[name]()
