"""Accelerator adapters: detection, CPU memory statistics, local-rank binding."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from lightrft.adapters.accelerators import (
    CpuAccelerator,
    CudaAccelerator,
    NpuAccelerator,
    detect_accelerator,
    local_rank,
)
from lightrft.adapters.accelerators.cpu import read_status_kib
from lightrft.domain.ports import Accelerator
from lightrft.domain.types import MemoryStats

NO_CUDA = not torch.cuda.is_available()
STATUS = """Name:\tpython
VmPeak:\t  900000 kB
VmHWM:\t    4096 kB
VmRSS:\t    2048 kB
Threads:\t4
"""


@pytest.mark.skipif(not NO_CUDA, reason="auto-detection picks CUDA on this machine")
def test_auto_detection_on_a_cpu_machine_gives_the_cpu() -> None:
    for preferred in (None, "auto", "AUTO"):
        assert isinstance(detect_accelerator(preferred), CpuAccelerator)


def test_the_cpu_can_always_be_asked_for() -> None:
    accelerator = detect_accelerator("cpu")
    assert isinstance(accelerator, CpuAccelerator)
    assert isinstance(accelerator, Accelerator)
    assert (accelerator.device_type, accelerator.collective_backend) == ("cpu", "gloo")
    assert accelerator.device() == torch.device("cpu")


@pytest.mark.skipif(not NO_CUDA, reason="CUDA is present here")
def test_asking_for_absent_cuda_names_what_is_available() -> None:
    with pytest.raises(RuntimeError, match=r"'cuda' was asked for but is not available.*cpu"):
        detect_accelerator("cuda")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        CudaAccelerator()


@pytest.mark.skipif(
    importlib.util.find_spec("torch_npu") is not None, reason="torch_npu is installed here"
)
def test_asking_for_an_absent_npu_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="'npu' was asked for"):
        detect_accelerator("npu")
    with pytest.raises(RuntimeError, match="torch_npu"):
        NpuAccelerator()


def test_an_unknown_name_lists_the_choices() -> None:
    with pytest.raises(ValueError, match="cuda, npu, cpu"):
        detect_accelerator("tpu")


def test_cpu_memory_comes_from_the_status_file(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text(STATUS)
    stats = CpuAccelerator(status).memory_stats()
    assert stats == MemoryStats(
        allocated=2048 * 1024, reserved=2048 * 1024, peak_allocated=4096 * 1024
    )
    assert read_status_kib(status) == {"VmPeak": 900000, "VmHWM": 4096, "VmRSS": 2048}


def test_cpu_memory_is_zero_when_the_status_file_is_missing(tmp_path: Path) -> None:
    assert CpuAccelerator(tmp_path / "absent").memory_stats() == MemoryStats()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_cpu_memory_of_this_process_grows_with_an_allocation() -> None:
    accelerator = CpuAccelerator()
    before = accelerator.memory_stats()
    block = torch.ones(64 * 2**20, dtype=torch.uint8)  # 64 MiB (mmap-backed), touched
    after = accelerator.memory_stats()
    assert before.allocated > 0
    assert after.allocated >= before.allocated + 32 * 2**20
    assert after.peak_allocated >= after.allocated
    del block
    accelerator.synchronize()
    accelerator.empty_cache()


def test_local_rank_reads_the_launcher_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert local_rank() == 0
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert local_rank() == 3
    monkeypatch.setenv("LOCAL_RANK", "x")
    with pytest.raises(ValueError, match="LOCAL_RANK"):
        local_rank()
    monkeypatch.setenv("LOCAL_RANK", "-1")
    with pytest.raises(ValueError, match="LOCAL_RANK"):
        local_rank()


@pytest.mark.gpu
@pytest.mark.skipif(NO_CUDA, reason="needs a CUDA device")
def test_cuda_accelerator_binds_the_local_rank_and_counts_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOCAL_RANK", "0")
    accelerator = detect_accelerator()
    assert isinstance(accelerator, CudaAccelerator)
    assert isinstance(accelerator, Accelerator)
    assert accelerator.device() == torch.device("cuda", 0)
    assert accelerator.collective_backend == "nccl"
    before = accelerator.memory_stats().allocated
    block = torch.empty(2**20, dtype=torch.float32, device=accelerator.device())
    accelerator.synchronize()
    stats = accelerator.memory_stats()
    assert stats.allocated >= before + 4 * 2**20
    assert stats.peak_allocated >= stats.allocated and stats.reserved >= stats.allocated
    del block
    accelerator.empty_cache()
    with pytest.raises(RuntimeError, match="device index"):
        CudaAccelerator(torch.cuda.device_count())


class _RecordingDeviceModule:
    """A stand-in for ``torch.npu``: answers the memory calls per device index, records the
    others."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int | None]] = []

    def synchronize(self, index: int) -> None:
        self.calls.append(("synchronize", index))

    def empty_cache(self) -> None:
        self.calls.append(("empty_cache", None))

    def memory_allocated(self, index: int) -> int:
        return 100 * index + 1

    def memory_reserved(self, index: int) -> int:
        return 100 * index + 2

    def max_memory_allocated(self, index: int) -> int:
        return 100 * index + 3


def test_a_device_module_accelerator_asks_its_module_about_its_own_device() -> None:
    from lightrft.adapters.accelerators.device_module import DeviceModuleAccelerator

    class Meta(DeviceModuleAccelerator):
        device_type = "meta"
        collective_backend = "gloo"

    module = _RecordingDeviceModule()
    accelerator = Meta(module, 2)
    assert isinstance(accelerator, Accelerator)
    assert accelerator.device() == torch.device("meta", 2)
    accelerator.synchronize()
    accelerator.empty_cache()
    assert module.calls == [("synchronize", 2), ("empty_cache", None)]
    assert accelerator.memory_stats() == MemoryStats(
        allocated=201, reserved=202, peak_allocated=203
    )
