"""oneDNN-packed copies of a model's float32 ``nn.Linear`` weights for CPU decode steps.

Shape letters: M rows of a matmul (decode: the rows generated together), K input features,
N output features.

On CPU, ``nn.Linear`` runs MKL's sgemm, which repacks the (N, K) weight on every call; at
decode sizes (M of a few to a few tens) that repacking is a full extra pass over the
weights, and on AMD CPUs MKL also takes its generic code path. oneDNN's matmul on a weight
reordered once into its blocked layout (``torch.ops.mkldnn._reorder_linear_weight``, the
layout ``torch.compile``'s CPU freezing uses) skips both. Values differ from MKL's by float
rounding only (about 1e-5 relative).

:class:`PackedLinears` keeps one packed copy per plain ``nn.Linear`` (tied weights, e.g. the
LM head, get their own copy), repacks a weight when it has changed since it was packed
(in-place updates bump ``Tensor._version``; a reload or ``discard`` sleep replaces the
storage), and routes the layers' forwards through the packed copies inside
:meth:`PackedLinears.active`. The copies cost the float32 size of the linear weights in
host memory: :meth:`PackedLinears.release` drops them (an engine sharing the trained
policy's weights releases them after every call, since the optimizer changes them anyway).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import Tensor

MIN_PACKING_ROWS = 16
"""The smallest row count weights are packed for. oneDNN picks the blocked layout from the
row count it is told; a layout packed for one row (an engine's first call, e.g. a
warm-up) made 16-row decode steps of SmolLM2-135M 25% slower (76 vs 60 ms per fused step,
2 threads, idle), while one packed for 16 or 64 rows ran both sizes at full speed."""


def packing_rows(rows: int) -> int:
    """The row count to pack weights for, for calls of ``rows`` rows."""
    return max(rows, MIN_PACKING_ROWS)


def packing_available(model: torch.nn.Module, device: torch.device) -> bool:
    """Whether :class:`PackedLinears` can serve ``model`` on ``device``: a CPU device, a
    PyTorch built with oneDNN and the packing ops, and float32 linear weights."""
    if device.type != "cpu" or not torch.backends.mkldnn.is_available():  # type: ignore[no-untyped-call]
        return False
    if not hasattr(torch.ops.mkldnn, "_reorder_linear_weight"):
        return False
    return any(_packable(m) for m in model.modules())


def _packable(module: torch.nn.Module) -> bool:
    """A plain ``nn.Linear`` with a materialized float32 CPU weight."""
    if type(module) is not torch.nn.Linear:
        return False
    weight = module.weight
    return weight.dtype == torch.float32 and weight.device.type == "cpu"


class PackedMatmul:
    """One matmul (M, K) -> (M, N) on the concatenation of several linears' weights (their
    biases too, zeros for a missing one), packed by oneDNN for about ``rows`` rows, with the
    (storage, version) of every source tensor it was packed from (:meth:`current`)."""

    def __init__(self, linears: Sequence[torch.nn.Linear], rows: int) -> None:
        self.source = _sources(linears)
        weight = torch.cat([layer.weight.detach() for layer in linears])  # [N, K]
        self.weight = torch.ops.mkldnn._reorder_linear_weight(weight, rows)
        self.bias = _concat([layer.bias for layer in linears], [m.out_features for m in linears])

    def current(self, linears: Sequence[torch.nn.Linear]) -> bool:
        """Whether no source weight or bias changed since the packing."""
        return self.source == _sources(linears)

    def __call__(self, x: Tensor) -> Tensor:
        out: Tensor = torch.ops.mkldnn._linear_pointwise(x, self.weight, self.bias, "none", [], "")
        return out


def _sources(linears: Sequence[torch.nn.Linear]) -> tuple[tuple[int, int], ...]:
    """(data_ptr, _version) of each weight and bias: any change means a repack."""
    tensors = [t for layer in linears for t in (layer.weight, layer.bias) if t is not None]
    return tuple((t.data_ptr(), t._version) for t in tensors)


def _concat(tensors: Sequence[Tensor | None], sizes: Sequence[int]) -> Tensor | None:
    """The tensors concatenated along dim 0 (zeros for a missing one); ``None`` if all are."""
    if all(t is None for t in tensors):
        return None
    reference = next(t for t in tensors if t is not None)
    parts = [
        reference.new_zeros(size) if t is None else t
        for t, size in zip(tensors, sizes, strict=True)
    ]
    return torch.cat([p.detach() for p in parts])


class PackedCache:
    """Packed matmuls by key, each repacked (for at least :data:`MIN_PACKING_ROWS` rows) when
    one of its source tensors changed since it was packed; ``packs`` counts the packings."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, PackedMatmul] = {}
        self.packs = 0

    def get(self, key: Hashable, linears: Sequence[torch.nn.Linear], rows: int) -> PackedMatmul:
        """The packed matmul of ``linears`` under ``key``, packed again if it is stale."""
        packed = self._entries.get(key)
        if packed is None or not packed.current(linears):
            packed = self._entries[key] = PackedMatmul(linears, packing_rows(rows))
            self.packs += 1
        return packed

    def clear(self) -> None:
        """Drops every packed copy."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class PackedLinears:
    """Packed copies of ``model``'s plain float32 ``nn.Linear`` weights (see module doc)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self._layers: list[torch.nn.Linear] = [
            m for m in model.modules() if isinstance(m, torch.nn.Linear) and _packable(m)
        ]
        self._packed = PackedCache()

    @property
    def packs(self) -> int:
        """Weights packed so far (a repack counts again)."""
        return self._packed.packs

    @contextmanager
    def active(self, rows: int) -> Iterator[None]:
        """Within the block the layers' forwards use the packed weights, packed for
        matmuls of about ``rows`` rows (any row count gives the same values)."""
        if rows < 1:
            raise ValueError(f"rows must be >= 1, got {rows}")
        try:
            for index, layer in enumerate(self._layers):
                packed = self._packed.get(index, (layer,), rows)
                layer.forward = _packed_forward(packed, layer.out_features)  # type: ignore[method-assign]
            yield
        finally:
            for layer in self._layers:
                layer.__dict__.pop("forward", None)

    def release(self) -> None:
        """Drops the packed copies (the next :meth:`active` packs again)."""
        self._packed.clear()


def _packed_forward(packed: PackedMatmul, out_features: int):  # type: ignore[no-untyped-def]
    """``nn.Linear.forward`` on a packed weight: (..., K) -> (..., N)."""

    def forward(x: Tensor) -> Tensor:
        return packed(x.reshape(-1, x.shape[-1])).view(*x.shape[:-1], out_features)

    return forward
