"""Gathering the full parameters of an FSDP2 model, a bucket at a time.

Shape letters: W ranks, D0 the first dimension of a parameter, C = ceil(D0 / W) rows per
rank (the ``torch.chunk`` split FSDP2 uses; the last ranks may hold fewer rows or none).

Parameters are ``DTensor`` s sharded on dim 0. Instead of one all-gather per parameter,
consecutive parameters of the same dtype are packed into a bucket of at most
``bucket_bytes`` (full size) and gathered with one ``all_gather_into_tensor``; a parameter
larger than the bucket is gathered alone. At most one bucket of full tensors is alive at
a time while the consumer drops what it was given.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.distributed.tensor import DTensor, Shard

WRAPPER_PREFIXES = ("_fsdp_wrapped_module.", "_checkpoint_wrapped_module.", "_orig_mod.")


def clean_name(name: str) -> str:
    """The Hugging Face name of a parameter: wrapper segments (activation checkpointing,
    ``torch.compile``, FSDP1) removed."""
    for prefix in WRAPPER_PREFIXES:
        name = name.replace(prefix, "")
    return name


def full_state(
    module: nn.Module, *, device: torch.device, bucket_bytes: int
) -> Iterator[tuple[str, Tensor]]:
    """(name, full tensor) for every entry of ``module.state_dict()``, in its order.

    Sharded parameters come back unsharded on ``device``; buffers (replicated) as they
    are. Every rank must iterate to the end (the gathers are collective).
    """
    pending: list[tuple[str, DTensor]] = []
    pending_bytes = 0
    for name, value in module.state_dict().items():
        name = clean_name(name)
        if not _dim0_sharded(value):
            yield from _gather_bucket(pending, device)
            pending, pending_bytes = [], 0
            full = value.full_tensor() if isinstance(value, DTensor) else value
            yield name, full.detach()
            continue
        size = value.numel() * value.element_size()
        if pending and (
            pending_bytes + size > bucket_bytes
            or value.dtype != pending[0][1].dtype
            or value.device_mesh is not pending[0][1].device_mesh
        ):
            yield from _gather_bucket(pending, device)
            pending, pending_bytes = [], 0
        pending.append((name, value))
        pending_bytes += size
    yield from _gather_bucket(pending, device)


def _dim0_sharded(value: Tensor) -> bool:
    return (
        isinstance(value, DTensor)
        and value.device_mesh.ndim == 1
        and tuple(value.placements) == (Shard(0),)
        and value.ndim >= 1
    )


def _gather_bucket(
    bucket: list[tuple[str, DTensor]], device: torch.device
) -> Iterator[tuple[str, Tensor]]:
    """One all-gather for every parameter of ``bucket``; yields their full tensors."""
    if not bucket:
        return
    mesh = bucket[0][1].device_mesh
    world = mesh.size()
    layout: list[tuple[int, int]] = []  # (elements per rank, rows per rank) per parameter
    pieces: list[Tensor] = []
    for _, value in bucket:
        rows = math.ceil(value.shape[0] / world)
        padded = rows * math.prod(value.shape[1:])  # C * (numel / D0) elements per rank
        local = value.to_local().detach().reshape(-1).to(device)
        piece = torch.zeros(padded, dtype=value.dtype, device=device)
        piece[: local.numel()] = local
        pieces.append(piece)
        layout.append((padded, rows))
    flat = torch.cat(pieces)  # [sum of padded sizes], this rank's rows of every parameter
    del pieces
    gathered = torch.empty(world * flat.numel(), dtype=flat.dtype, device=device)
    _all_gather_flat(gathered, flat, mesh.get_group())
    del flat
    by_rank = gathered.view(world, -1)  # [W, sum of padded sizes]
    offset = 0
    for (name, value), (padded, rows) in zip(bucket, layout, strict=True):
        full = by_rank[:, offset : offset + padded].reshape(world * rows, *value.shape[1:])
        yield name, full[: value.shape[0]]
        offset += padded


def _all_gather_flat(output: Tensor, local: Tensor, group: dist.ProcessGroup) -> None:
    """``output`` [W * n] <- the ``local`` [n] of every rank, in rank order."""
    gather = getattr(dist, "all_gather_single", None)  # torch >= 2.13
    if gather is None:
        gather = dist.all_gather_into_tensor
    gather(output, local, group=group)
