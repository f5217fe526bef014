"""Offline merge of FSDP2 per-rank shards (``torch.chunk`` along dim 0, rank order)."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.fsdp.shard_merge import merge_fsdp2_shards


def test_shards_concatenate_in_rank_order_and_buffers_come_from_rank_0() -> None:
    weight = torch.arange(15.0).view(5, 3)
    chunks = torch.chunk(weight, 2)  # rows 0-2 on rank 0, 3-4 on rank 1
    tiny = torch.tensor([7.0])
    buffer = torch.tensor([1.0, 2.0])
    ranks = [
        {"_checkpoint_wrapped_module.w": chunks[0], "t": tiny, "b": buffer},
        {"_checkpoint_wrapped_module.w": chunks[1], "t": torch.empty(0), "b": buffer},
    ]
    shapes = {"w": weight.shape, "t": tiny.shape, "b": buffer.shape}
    merged = merge_fsdp2_shards(ranks, shapes)
    assert torch.equal(merged["w"], weight)  # wrapper prefix removed
    assert torch.equal(merged["t"], tiny)  # one row: all of it on rank 0, rank 1 empty
    assert torch.equal(merged["b"], buffer)


def test_shards_of_another_model_are_named() -> None:
    ranks = [{"w": torch.zeros(2, 3)}, {"w": torch.zeros(2, 3)}]
    with pytest.raises(
        ValueError, match=r"w: the shards of 2 ranks make \(4, 3\), the model has \(5, 3\)"
    ):
        merge_fsdp2_shards(ranks, {"w": torch.Size((5, 3))})
