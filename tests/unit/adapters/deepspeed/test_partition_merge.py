"""Offline merge of DeepSpeed per-rank states: ZeRO-3 fp32 partitions in optimizer order."""

from __future__ import annotations

import torch
from torch import nn

from lightrft.adapters.deepspeed.partition_merge import merge_zero_states


def _partitions(tensor: torch.Tensor, world: int) -> list[torch.Tensor]:
    """Each rank's ceil(n / W) slice of the flat tensor, the last one zero-padded."""
    part = -(-tensor.numel() // world)
    flat = torch.nn.functional.pad(tensor.flatten(), (0, part * world - tensor.numel()))
    return [flat[r * part : (r + 1) * part] for r in range(world)]


def test_zero3_parameters_are_rebuilt_from_the_rank_partitions() -> None:
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(3, 5), nn.LayerNorm(5))
    trained = {n: torch.randn_like(p) for n, p in module.named_parameters()}
    # optimizer order: matrices first (0.weight), then 1-D tensors (0.bias, 1.weight, 1.bias)
    order = ["0.weight", "0.bias", "1.weight", "1.bias"]
    world = 2
    flats = [
        torch.cat([_partitions(trained[name], world)[r] for name in order]) for r in range(world)
    ]
    layout = {"zero_stage": 3, "world_size": world}
    states = [
        {"layout": {**layout, "rank": r}, "module": {}, "zero": {"fp32_flat_groups": [flats[r]]}}
        for r in range(world)
    ]
    merged = merge_zero_states(states, module)
    assert merged.keys() == trained.keys()
    assert all(torch.equal(merged[n], trained[n]) for n in trained)


def test_zero2_module_state_is_complete_on_rank_0() -> None:
    state = {"w": torch.ones(2)}
    merged = merge_zero_states(
        [{"layout": {"zero_stage": 2, "world_size": 1}, "module": state}], nn.Linear(1, 1)
    )
    assert merged == state
