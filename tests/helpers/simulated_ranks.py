"""Runs a function on several simulated data-parallel ranks (threads) with a real all-reduce."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import torch
from torch import Tensor

R = TypeVar("R")


def run_on_ranks(fns: Sequence[Callable[[Callable[[torch.Tensor], torch.Tensor]], R]]) -> list[R]:
    """Calls ``fns[rank](all_reduce_sum)`` in one thread per rank; returns results by rank.

    ``all_reduce_sum`` blocks until every rank has contributed, then returns the sum, like
    ``torch.distributed.all_reduce`` with ``SUM``. Each rank must issue the same sequence of
    all-reduce calls.
    """
    world = len(fns)
    barrier = threading.Barrier(world)
    slots: list[Any] = [None] * world
    results: list[Any] = [None] * world
    errors: list[BaseException] = []

    def make_reduce(rank: int) -> Callable[[torch.Tensor], torch.Tensor]:
        def reduce(t: torch.Tensor) -> torch.Tensor:
            slots[rank] = t.detach().clone()
            barrier.wait()
            total = torch.stack([s for s in slots]).sum(dim=0).to(t.dtype)
            barrier.wait()
            return total

        return reduce

    def worker(rank: int) -> None:
        try:
            results[rank] = fns[rank](make_reduce(rank))
        except BaseException as exc:  # pragma: no cover - surfaced below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    if errors:
        raise errors[0]
    return results


class ThreadCollective:
    """Rank ``rank`` of ``world`` simulated ranks sharing one all-reduce."""

    def __init__(self, rank: int, world: int, reduce: Callable[[Tensor], Tensor]) -> None:
        self.rank, self.world_size, self._reduce = rank, world, reduce

    def all_reduce_sum(self, tensor: Tensor) -> Tensor:
        return self._reduce(tensor)
