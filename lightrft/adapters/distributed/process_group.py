"""Joining the data-parallel process group from the variables ``torchrun`` sets.

``torchrun`` exports RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT to every
worker. Without them the process is rank 0 of 1 and, unless asked, no group is created
(single-process code paths then need no ``torch.distributed`` at all).

The group gets two backends: gloo for host tensors (counts, statistics, checkpoint
planning) and the accelerator's own (nccl / hccl) for device tensors, so a collective works
wherever its tensor lives.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

import torch
import torch.distributed as dist

HOST_BACKEND = "gloo"
DEFAULT_COLLECTIVE_TIMEOUT = timedelta(seconds=600)
"""How long a collective waits for the other ranks (``backend.collective_timeout_s``)."""


class LocalDeviceAccelerator(Protocol):
    """What joining a group needs from an accelerator (``lightrft.adapters.accelerators``)."""

    @property
    def collective_backend(self) -> str: ...

    def device(self) -> torch.device: ...


@dataclass(frozen=True)
class LaunchEnv:
    """This process's place in the job, as the launcher described it."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int = 29500
    launched: bool = False  # a launcher set WORLD_SIZE (even to 1)

    def __post_init__(self) -> None:
        if self.world_size < 1:
            raise ValueError(f"WORLD_SIZE must be >= 1, got {self.world_size}")
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"RANK must be in [0, {self.world_size}), got {self.rank}")
        if self.local_rank < 0:
            raise ValueError(f"LOCAL_RANK must be >= 0, got {self.local_rank}")

    @classmethod
    def from_env(cls) -> LaunchEnv:
        """Reads the launcher's variables; defaults describe a lone process."""
        env = os.environ
        return cls(
            rank=_int_var("RANK", 0),
            world_size=_int_var("WORLD_SIZE", 1),
            local_rank=_int_var("LOCAL_RANK", 0),
            master_addr=env.get("MASTER_ADDR", "127.0.0.1"),
            master_port=_int_var("MASTER_PORT", 29500),
            launched="WORLD_SIZE" in env,
        )


def _int_var(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name} must be an integer, got {raw!r}") from None


def group_backend(accelerator: LocalDeviceAccelerator) -> str:
    """``"gloo"`` on the host, else ``"cpu:gloo,<type>:<backend>"`` (both kinds of tensor)."""
    device = accelerator.device()
    backend = accelerator.collective_backend
    if backend == HOST_BACKEND:
        return HOST_BACKEND
    return f"cpu:{HOST_BACKEND},{device.type}:{backend}"


def init_process_group_from_env(
    accelerator: LocalDeviceAccelerator,
    *,
    single_process_group: bool = False,
    timeout: timedelta = DEFAULT_COLLECTIVE_TIMEOUT,
) -> LaunchEnv:
    """Binds this process to its device and joins the default process group.

    ``timeout`` bounds every collective of the group (a rank that stopped makes the others
    fail after it instead of hanging).

    Reads :class:`LaunchEnv` from the environment. With world size 1 and no launcher
    variables nothing is initialized unless ``single_process_group`` (then a one-rank
    group over an in-memory store, no port). Idempotent: an existing group is kept.
    """
    env = LaunchEnv.from_env()
    device = accelerator.device()
    if device.index is not None:
        torch.accelerator.set_device_index(device.index)
    if dist.is_initialized():
        return env
    if env.world_size == 1 and not env.launched:
        if single_process_group:
            dist.init_process_group(
                group_backend(accelerator),
                store=dist.HashStore(),  # type: ignore[attr-defined]
                rank=0,
                world_size=1,
                timeout=timeout,
            )
        return env
    by_env = "MASTER_ADDR" in os.environ and "MASTER_PORT" in os.environ
    dist.init_process_group(
        group_backend(accelerator),
        init_method="env://" if by_env else f"tcp://{_host(env.master_addr)}:{env.master_port}",
        rank=env.rank,
        world_size=env.world_size,
        timeout=timeout,
        device_id=device if device.index is not None else None,
    )
    return env


def _host(addr: str) -> str:
    """Brackets an IPv6 literal for a URL."""
    return f"[{addr}]" if ":" in addr and not addr.startswith("[") else addr


def is_main_process() -> bool:
    """True on global rank 0, and in a process that joined no group."""
    return not dist.is_initialized() or dist.get_rank() == 0


def shutdown_process_group() -> None:
    """Leaves the default process group (no-op when there is none)."""
    if dist.is_initialized():
        dist.destroy_process_group()


@contextmanager
def leaving_process_group() -> Iterator[None]:
    """Leaves the default process group when the block ends, so no rank exits with the
    group's threads alive (an interpreter exit with a live gloo group can abort with
    "terminate called without an active exception" while a slower rank still exports).

    After a normal end every rank first waits at a barrier (bounded by the group's
    timeout): all of them have finished their collectives. After an error the group is
    left at once; the other ranks then fail their next collective within the timeout.
    """
    try:
        yield
    except BaseException:
        shutdown_process_group()
        raise
    try:
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.barrier()
    finally:
        shutdown_process_group()
