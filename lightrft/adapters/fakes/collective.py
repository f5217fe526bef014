"""``FakeCollective``: the ``Collective`` port of a single process (rank 0 of 1)."""

from __future__ import annotations

from torch import Tensor


class FakeCollective:
    """Rank 0, world size 1; ``all_reduce_sum`` returns a copy. Records ``all_reduce_calls``."""

    def __init__(self) -> None:
        self.all_reduce_calls = 0

    @property
    def rank(self) -> int:
        """Always 0."""
        return 0

    @property
    def world_size(self) -> int:
        """Always 1."""
        return 1

    def all_reduce_sum(self, tensor: Tensor) -> Tensor:
        """The sum over one rank: a new tensor equal to ``tensor``."""
        self.all_reduce_calls += 1
        return tensor.clone()
