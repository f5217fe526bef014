"""`leaving_process_group`: no process exits with a live group (a live gloo group at
interpreter exit can abort the process while a slower rank still works)."""

from __future__ import annotations

import pytest
import torch.distributed as dist

from lightrft.adapters.distributed import leaving_process_group


def _join_alone() -> None:
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)


def test_the_group_is_left_after_a_normal_end() -> None:
    with leaving_process_group():
        _join_alone()
        assert dist.is_initialized()
    assert not dist.is_initialized()


def test_the_group_is_left_after_an_error_and_the_error_goes_on() -> None:
    with pytest.raises(RuntimeError, match="boom"), leaving_process_group():
        _join_alone()
        raise RuntimeError("boom")
    assert not dist.is_initialized()


def test_without_a_group_it_does_nothing() -> None:
    with leaving_process_group():
        pass
    assert not dist.is_initialized()
