"""Device visibility for a child process: indices mapped through this process's variable."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.accelerators.visibility import (
    DevicePlacementError,
    child_visible_devices,
    device_env,
    runtime_initialized,
    visible_devices,
)


@pytest.mark.parametrize(
    ("indices", "parent", "count", "expected"),
    [
        ([1], None, 2, "1"),  # no variable: index i is device i
        ([1, 0], None, 4, "1,0"),  # order kept: the child's device 0 is the first named
        ([1], "2,3", 2, "3"),  # through the parent's variable
        ([0, 1], " 2, 3 ", 2, "2,3"),
        ([1], "GPU-aa,GPU-bb", 2, "GPU-bb"),  # ids other than numbers pass through
        ([0], "5,7,9", 2, "5"),  # the runtime saw 2 of the 3 ids listed
    ],
)
def test_indices_map_through_the_parents_visible_devices(
    indices: list[int], parent: str | None, count: int, expected: str
) -> None:
    assert child_visible_devices(indices, parent, count, what="k") == expected


def test_an_index_the_parent_does_not_see_names_the_setting_and_the_count() -> None:
    with pytest.raises(DevicePlacementError, match=r"rollout.engine_devices: device index 2 "):
        child_visible_devices([2], "2,3", 2, what="rollout.engine_devices")
    with pytest.raises(DevicePlacementError, match=r"sees 2 device\(s\) \(its visibility"):
        child_visible_devices([0, 2], "2,3", 2, what="rollout.engine_devices")
    with pytest.raises(DevicePlacementError, match=r"index 1 but this process sees 1 device"):
        child_visible_devices([1], None, 1, what="k")
    assert visible_devices("", 0) == []


def test_a_cpu_run_has_no_devices_to_place_a_process_on() -> None:
    with pytest.raises(DevicePlacementError, match=r"accelerator is 'cpu', which has none"):
        device_env("cpu", [1], {}, what="rollout.engine_devices")


@pytest.mark.skipif(torch.cuda.is_available(), reason="counts this machine's missing GPUs")
def test_cuda_without_devices_refuses_every_index() -> None:
    with pytest.raises(DevicePlacementError, match=r"index 0 but this process sees 0 device"):
        device_env("cuda", [0], {}, what="rollout.engine_devices")


def test_a_device_type_without_a_runtime_is_never_initialised() -> None:
    assert not runtime_initialized("cpu")
