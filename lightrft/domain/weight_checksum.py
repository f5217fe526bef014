"""Checksums of synced weights: does the engine generate with the trainer's version?

A checksum is a BLAKE2b digest over (name, dtype, shape, bytes) of each named tensor, the
names sorted, so it does not depend on the order the tensors streamed in. The trainer digests
what it sends (``Policy.weights_for_sync``: LoRA adapters already merged) cast to the
engine's dtype; an engine that implements :class:`ChecksummedEngine` digests what it holds
under the same names. Equal checksums mean the engine holds exactly the trainer's tensors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol, runtime_checkable

import torch
from torch import Tensor


def tensor_digest(tensor: Tensor, dtype: torch.dtype | None = None) -> bytes:
    """Digest of one tensor (cast to ``dtype`` first when given), over dtype, shape and bytes."""
    t = tensor.detach()
    if dtype is not None and t.dtype != dtype:
        t = t.to(dtype)
    t = t.contiguous().cpu()
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{t.dtype}|{tuple(t.shape)}|".encode())
    h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.digest()


def combine_digests(digests: dict[str, bytes]) -> str:
    """The checksum (hex) of named digests, names sorted."""
    h = hashlib.blake2b(digest_size=16)
    for name in sorted(digests):
        h.update(name.encode())
        h.update(b"\0")
        h.update(digests[name])
    return h.hexdigest()


def weights_checksum(
    weights: Iterable[tuple[str, Tensor]], dtype: torch.dtype | None = None
) -> str:
    """The checksum of named tensors (each cast to ``dtype`` when given)."""
    return combine_digests({name: tensor_digest(t, dtype) for name, t in weights})


class DigestingStream:
    """Passes named tensors through unchanged while digesting each one (cast to ``dtype``),
    so a sync is checksummed without holding a second copy of the weights."""

    def __init__(self, weights: Iterable[tuple[str, Tensor]], dtype: torch.dtype | None) -> None:
        self._weights, self._dtype = weights, dtype
        self.digests: dict[str, bytes] = {}

    def __iter__(self) -> Iterator[tuple[str, Tensor]]:
        for name, tensor in self._weights:
            self.digests[name] = tensor_digest(tensor, self._dtype)
            yield name, tensor

    @property
    def names(self) -> list[str]:
        """The names streamed so far."""
        return list(self.digests)

    def checksum(self) -> str:
        """The checksum of everything streamed so far."""
        return combine_digests(self.digests)


@runtime_checkable
class ChecksummedEngine(Protocol):
    """A rollout engine that can digest the weights it generates with."""

    @property
    def weights_dtype(self) -> torch.dtype | None:
        """The dtype the engine stores synced weights in (``None``: as sent)."""
        ...

    def weights_checksum(self, names: Sequence[str]) -> str:
        """:func:`weights_checksum` of the engine's current tensors under ``names``."""
        ...
