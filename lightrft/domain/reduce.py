"""The one collective the domain needs: a sum over data-parallel ranks.

Domain code never imports ``torch.distributed``. Functions whose statistics must cover the
whole global batch (masked whitening, loss normalizers, running reward statistics) take an
``all_reduce_sum`` callable; the application passes ``Strategy.all_reduce`` and tests pass
the default, :func:`local_sum`, which is the single-process identity.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor

AllReduceSum = Callable[[Tensor], Tensor]
"""Returns the element-wise sum of a tensor over all data-parallel ranks (same shape)."""


def local_sum(tensor: Tensor) -> Tensor:
    """The single-process all-reduce: the tensor itself."""
    return tensor
