"""Process-group setup from launcher variables, and the two ``Collective`` adapters."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
import torch.distributed as dist

from lightrft.adapters.accelerators import CpuAccelerator
from lightrft.adapters.distributed import (
    LaunchEnv,
    LocalCollective,
    TorchCollective,
    init_process_group_from_env,
    is_main_process,
    shutdown_process_group,
)
from lightrft.adapters.distributed.process_group import group_backend
from lightrft.domain.ports import Collective

LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@pytest.fixture
def bare_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for var in LAUNCH_VARS:
        monkeypatch.delenv(var, raising=False)
    yield monkeypatch
    shutdown_process_group()


class FakeGpu:
    """Just what group_backend reads from an accelerator."""

    collective_backend = "nccl"

    def device(self) -> torch.device:
        return torch.device("cuda", 1)


def test_launch_env_reads_the_torchrun_variables(bare_env: pytest.MonkeyPatch) -> None:
    assert LaunchEnv.from_env() == LaunchEnv(0, 1, 0, "127.0.0.1", 29500)
    for var, value in zip(LAUNCH_VARS, ("3", "4", "1", "10.0.0.2", "1234"), strict=True):
        bare_env.setenv(var, value)
    assert LaunchEnv.from_env() == LaunchEnv(3, 4, 1, "10.0.0.2", 1234, launched=True)


def test_launch_env_refuses_inconsistent_values(bare_env: pytest.MonkeyPatch) -> None:
    bare_env.setenv("RANK", "2")
    bare_env.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="RANK"):
        LaunchEnv.from_env()
    bare_env.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE must be an integer"):
        LaunchEnv.from_env()


def test_a_lone_process_needs_no_process_group(bare_env: pytest.MonkeyPatch) -> None:
    env = init_process_group_from_env(CpuAccelerator())
    assert (env.rank, env.world_size) == (0, 1)
    assert not dist.is_initialized()
    assert is_main_process()
    with pytest.raises(RuntimeError, match="LocalCollective"):
        TorchCollective()


def test_a_one_rank_group_can_be_asked_for(bare_env: pytest.MonkeyPatch) -> None:
    init_process_group_from_env(CpuAccelerator(), single_process_group=True)
    assert dist.is_initialized() and dist.get_world_size() == 1
    collective = TorchCollective()
    assert isinstance(collective, Collective)
    assert (collective.rank, collective.world_size) == (0, 1)
    assert is_main_process()
    value = torch.tensor([1.5, -2.0], dtype=torch.float64)
    summed = collective.all_reduce_sum(value)
    assert summed is not value and summed.dtype == torch.float64
    assert summed.tolist() == [1.5, -2.0]
    summed += 1
    assert value.tolist() == [1.5, -2.0]  # the input is untouched
    init_process_group_from_env(CpuAccelerator())  # idempotent: keeps the group
    assert dist.is_initialized()
    shutdown_process_group()
    assert not dist.is_initialized()


def test_a_launched_world_of_one_joins_over_tcp(bare_env: pytest.MonkeyPatch) -> None:
    from lightrft.adapters.distributed import free_port

    for var, value in zip(LAUNCH_VARS, ("0", "1", "0", "127.0.0.1", str(free_port())), strict=True):
        bare_env.setenv(var, value)
    env = init_process_group_from_env(CpuAccelerator())
    assert env.launched and dist.is_initialized()
    assert TorchCollective().all_reduce_sum(torch.ones(2)).tolist() == [1.0, 1.0]


def test_device_backends_are_paired_with_gloo_for_host_tensors() -> None:
    assert group_backend(CpuAccelerator()) == "gloo"
    assert group_backend(FakeGpu()) == "cpu:gloo,cuda:nccl"


def test_local_collective_is_rank_0_of_1_and_copies() -> None:
    collective = LocalCollective()
    assert isinstance(collective, Collective)
    assert (collective.rank, collective.world_size) == (0, 1)
    value = torch.tensor([2.0], requires_grad=True)
    summed = collective.all_reduce_sum(value)
    assert summed is not value and not summed.requires_grad
    assert summed.tolist() == [2.0]
