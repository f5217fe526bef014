"""``FakeCollective``: the ``Collective`` port of a single process (rank 0 of 1)."""

from __future__ import annotations

from torch import Tensor

from lightrft.adapters.strategy_parts.local_collective import LocalCollective


class FakeCollective(LocalCollective):
    """Rank 0, world size 1; ``all_reduce_sum`` returns a copy. Records ``all_reduce_calls``."""

    def __init__(self) -> None:
        self.all_reduce_calls = 0

    def all_reduce_sum(self, tensor: Tensor) -> Tensor:
        """The sum over one rank (a copy, see :class:`LocalCollective`); counts the call."""
        self.all_reduce_calls += 1
        return super().all_reduce_sum(tensor)
