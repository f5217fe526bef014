"""Which accelerator devices another process sees: the device-visibility environment variable
of each device type, and the indices of this process mapped through it.

A process that starts with ``CUDA_VISIBLE_DEVICES=3`` (Ascend: ``ASCEND_RT_VISIBLE_DEVICES``)
sees one device, physical device 3, as its device 0. The variable is read when the device
runtime starts in that process, so it must be set before anything there initialises it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

# torch's device type -> the environment variable that limits the devices a process sees
VISIBILITY_VARIABLES: dict[str, str] = {
    "cuda": "CUDA_VISIBLE_DEVICES",
    "npu": "ASCEND_RT_VISIBLE_DEVICES",
}


class DevicePlacementError(ValueError):
    """Devices asked for that this process cannot hand to another one."""


def visible_devices(parent_value: str | None, count: int) -> list[str]:
    """The ids (as the driver names them) of this process's devices ``0..count-1``:
    ``parent_value`` (this process's visibility variable, ``None`` when unset) lists them in
    order; unset, device ``i`` is id ``str(i)``."""
    if parent_value is None:
        return [str(i) for i in range(count)]
    ids = [part.strip() for part in parent_value.split(",") if part.strip()]
    return ids[:count]  # the runtime stops at the first id it cannot use


def child_visible_devices(
    indices: Sequence[int], parent_value: str | None, count: int, *, what: str
) -> str:
    """The visibility value that gives a child process this process's devices ``indices``
    (in that order; the child's device 0 is ``indices[0]``). ``what`` names the setting in
    the error raised for an index this process does not see."""
    visible = visible_devices(parent_value, count)
    for index in indices:
        if not 0 <= index < len(visible):
            seen = "" if parent_value is None else f" (its visibility variable: {parent_value!r})"
            raise DevicePlacementError(
                f"{what}: device index {index} but this process sees {len(visible)} "
                f"device(s){seen}; indices run from 0 to {len(visible) - 1}"
            )
    return ",".join(visible[i] for i in indices)


def device_env(
    device_type: str, indices: Sequence[int], environ: Mapping[str, str], *, what: str
) -> dict[str, str]:
    """The environment of a child process that runs on this process's ``device_type``
    devices ``indices``: the type's visibility variable, and ``LOCAL_RANK=0`` so the child's
    accelerator takes the first of them. A device type without devices to hand out (cpu)
    is refused."""
    variable = VISIBILITY_VARIABLES.get(device_type)
    if variable is None:
        known = ", ".join(sorted(VISIBILITY_VARIABLES))
        raise DevicePlacementError(
            f"{what}={list(indices)} places a process on accelerator devices, but this run's "
            f"accelerator is {device_type!r}, which has none to place it on ({known} have)"
        )
    count = device_count(device_type)
    value = child_visible_devices(indices, environ.get(variable), count, what=what)
    return {variable: value, "LOCAL_RANK": "0"}


def device_count(device_type: str) -> int:
    """How many ``device_type`` devices this process sees (torch's device module)."""
    return int(getattr(torch, device_type).device_count())


def runtime_initialized(device_type: str) -> bool:
    """Whether this process's ``device_type`` runtime has started (then a change of its
    visibility variable no longer has an effect); ``False`` for a type without one (cpu).
    Only the runtime's full start is seen: a device count read by the driver alone (which
    also fixes the visible devices) leaves no trace here."""
    if device_type not in VISIBILITY_VARIABLES:
        return False
    module = getattr(torch, device_type, None)
    is_initialized = getattr(module, "is_initialized", None)
    return bool(is_initialized()) if callable(is_initialized) else False
