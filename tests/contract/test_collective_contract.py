"""Contract of the ``Collective`` port in a single process (world size 1)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from lightrft.adapters.distributed import LocalCollective
from lightrft.adapters.fakes import FakeCollective
from lightrft.adapters.single_device import SingleDeviceStrategy
from lightrft.domain.ports import Collective
from lightrft.domain.types import OptimizerParams


def make_single_device_strategy() -> Collective:
    return SingleDeviceStrategy(torch.device("cpu"), OptimizerParams())


IMPLEMENTATIONS: list[object] = [
    pytest.param(FakeCollective, id="fake"),
    pytest.param(LocalCollective, id="local"),
    pytest.param(make_single_device_strategy, id="single-device-strategy"),
]


@pytest.fixture(params=IMPLEMENTATIONS)
def collective(request: pytest.FixtureRequest) -> Collective:
    factory: Callable[[], Collective] = request.param
    return factory()


def test_single_process_sum_is_a_copy(collective: Collective) -> None:
    assert isinstance(collective, Collective)
    assert 0 <= collective.rank < collective.world_size
    if collective.world_size != 1:
        pytest.skip("checked with world size 1 only")
    x = torch.tensor([1.5, -2.0])
    y = collective.all_reduce_sum(x)
    assert torch.equal(y, x)
    y.add_(1)
    assert x.tolist() == [1.5, -2.0]
