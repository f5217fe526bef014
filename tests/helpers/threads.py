"""A fixture body for tests of tiny models: one torch thread (fastest for tiny tensors, above
all on a busy shared CPU), restored afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import torch


def one_torch_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
