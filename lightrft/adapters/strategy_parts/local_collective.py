"""``LocalCollective``: the ``Collective`` port of a lone process (rank 0 of 1).

The one implementation for world size 1: the wiring uses it when no process group is
launched, the single-device strategy is one, and the test fake records calls on top of it.
"""

from __future__ import annotations

from torch import Tensor


class LocalCollective:
    """Rank 0 of 1: ``all_reduce_sum`` returns a copy."""

    @property
    def rank(self) -> int:
        """Always 0."""
        return 0

    @property
    def world_size(self) -> int:
        """Always 1."""
        return 1

    def all_reduce_sum(self, tensor: Tensor) -> Tensor:
        """The sum over one rank: a new tensor equal to ``tensor`` (no autograd history),
        as :class:`~lightrft.adapters.distributed.collective.TorchCollective` returns."""
        return tensor.detach().clone()
