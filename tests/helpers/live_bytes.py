"""``LiveBytes``: the peak bytes of tensor storages that ops allocate (memory tests)."""

from __future__ import annotations

import weakref
from typing import Any

from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class LiveBytes(TorchDispatchMode):
    """Tracks bytes of tensor storages created by ops inside the mode, and their peak."""

    def __init__(self, *existing: Tensor) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
        self._seen = {id(t.untyped_storage()) for t in existing}  # not counted

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, Tensor) and id(t.untyped_storage()) not in self._seen:
                storage = t.untyped_storage()
                self._seen.add(id(storage))
                self.live += storage.nbytes()
                self.peak = max(self.peak, self.live)
                weakref.finalize(storage, self._free, id(storage), storage.nbytes())
        return out

    def _free(self, key: int, nbytes: int) -> None:
        self.live -= nbytes
        self._seen.discard(key)
