"""The ``Collective`` port over ``torch.distributed``; ``LocalCollective`` (a lone process)
lives in :mod:`lightrft.adapters.strategy_parts.local_collective` and is re-exported here."""

from __future__ import annotations

import torch.distributed as dist
from torch import Tensor

from lightrft.adapters.strategy_parts.local_collective import LocalCollective

__all__ = ["CollectiveTimeoutError", "LocalCollective", "TorchCollective"]


class CollectiveTimeoutError(TimeoutError):
    """A collective that the other ranks did not join in time (one stopped or hangs)."""


class TorchCollective:
    """Data-parallel rank, world size and sum over a ``torch.distributed`` group.

    Args:
        group: the process group (``None``: the default group, which must exist).

    ``all_reduce_sum`` reduces where the tensor lives: host tensors over gloo, device
    tensors over nccl / hccl (the group from
    :func:`~lightrft.adapters.distributed.process_group.init_process_group_from_env` has
    both).
    """

    def __init__(self, group: dist.ProcessGroup | None = None) -> None:
        if not dist.is_initialized():
            raise RuntimeError(
                "TorchCollective needs an initialized process group; call "
                "init_process_group_from_env first (or use LocalCollective in one process)"
            )
        self._group = group

    @property
    def rank(self) -> int:
        """This process's rank in the group."""
        return int(dist.get_rank(self._group))

    @property
    def world_size(self) -> int:
        """Number of ranks in the group."""
        return int(dist.get_world_size(self._group))

    def all_reduce_sum(self, tensor: Tensor) -> Tensor:
        """Element-wise sum over ranks: a new tensor, same shape, dtype and device.

        Every rank must call it with the same shape and dtype. The input is untouched and
        the result carries no autograd history.
        """
        out = tensor.detach().clone()
        try:
            dist.all_reduce(out, op=dist.ReduceOp.SUM, group=self._group)
        except RuntimeError as error:  # torch's DistBackendError among them
            if "timed out" not in str(error).lower() and "timeout" not in str(error).lower():
                raise
            raise CollectiveTimeoutError(
                f"rank {self.rank} of {self.world_size}: all_reduce (sum) of a "
                f"{tuple(out.shape)} tensor timed out: another rank stopped or hangs "
                f"(backend.collective_timeout_s bounds the wait); torch: "
                f"{' '.join(str(error).split())[:300]}"
            ) from error
        return out
