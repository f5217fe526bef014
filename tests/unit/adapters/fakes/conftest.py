"""Fixtures of the fake-adapter tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def one_cpu_thread() -> Iterator[None]:
    """Tiny models run fastest on one thread (and do not fight other processes for cores)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
