"""Contract of the ``Accelerator`` port. Append real accelerators to ``IMPLEMENTATIONS``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lightrft.adapters.accelerators import CpuAccelerator, CudaAccelerator
from lightrft.adapters.fakes import FakeAccelerator
from lightrft.domain.ports import Accelerator
from lightrft.domain.types import MemoryStats

IMPLEMENTATIONS: list[object] = [
    pytest.param(FakeAccelerator, id="fake"),
    pytest.param(CpuAccelerator, id="cpu"),
    pytest.param(lambda: CudaAccelerator(0), id="cuda", marks=pytest.mark.gpu),
]
BACKENDS = {"cuda": "nccl", "npu": "hccl", "cpu": "gloo"}


@pytest.fixture(params=IMPLEMENTATIONS)
def accelerator(request: pytest.FixtureRequest) -> Accelerator:
    factory: Callable[[], Accelerator] = request.param
    return factory()


def test_device_facts(accelerator: Accelerator) -> None:
    assert isinstance(accelerator, Accelerator)
    assert accelerator.device_type in BACKENDS
    assert accelerator.collective_backend == BACKENDS[accelerator.device_type]


def test_calls_and_memory_stats(accelerator: Accelerator) -> None:
    accelerator.synchronize()
    accelerator.empty_cache()
    stats = accelerator.memory_stats()
    assert isinstance(stats, MemoryStats)
    for value in (stats.allocated, stats.reserved, stats.peak_allocated):
        assert isinstance(value, int) and value >= 0
    assert stats.peak_allocated >= stats.allocated
