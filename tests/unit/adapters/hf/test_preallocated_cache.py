"""preallocated_cache: the same logits as DynamicCache step by step, rows dropped alike,
nothing concatenated per step, a clear error past its capacity."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

from lightrft.adapters.hf.preallocated_cache import PreallocatedLayer, preallocated_cache
from tests.unit.adapters.hf.hf_tiny import tiny_model


def _run(
    cache: DynamicCache, model: torch.nn.Module, steps: int, drop_at: int
) -> list[torch.Tensor]:
    torch.manual_seed(0)
    ids = torch.randint(3, 250, (4, 6))
    mask = torch.ones(4, 6 + steps, dtype=torch.long)
    mask[0, :2] = 0  # row 0 left-padded by 2
    positions = (mask[:, :6].cumsum(-1) - 1).clamp(min=0)
    out = model(
        input_ids=ids,
        attention_mask=mask[:, :6],
        position_ids=positions,
        past_key_values=cache,
        use_cache=True,
    )
    logits = [out.logits[:, -1]]
    token, position = out.logits[:, -1].argmax(-1, keepdim=True), positions[:, -1:] + 1
    for step in range(steps):
        if step == drop_at:  # keep rows 2 and 0, in that order
            keep = torch.tensor([2, 0])
            cache.reorder_cache(keep)
            mask, token, position = mask[keep], token[keep], position[keep]
        out = model(
            input_ids=token,
            attention_mask=mask[:, : 7 + step],
            position_ids=position,
            past_key_values=cache,
            use_cache=True,
        )
        logits.append(out.logits[:, -1])
        token, position = out.logits[:, -1].argmax(-1, keepdim=True), position + 1
    return logits


def test_logits_match_dynamic_cache_with_padding_and_dropped_rows() -> None:
    model = tiny_model(0)
    with torch.no_grad():
        expected = _run(DynamicCache(config=model.config), model, steps=5, drop_at=2)
        cache = preallocated_cache(model.config, capacity=11)
        got = _run(cache, model, steps=5, drop_at=2)
    assert all(isinstance(layer, PreallocatedLayer) for layer in cache.layers)
    assert cache.get_seq_length() == 11
    for e, g in zip(expected, got, strict=True):
        torch.testing.assert_close(g, e, atol=1e-5, rtol=1e-5)


def test_writes_in_place_into_one_buffer() -> None:
    layer = PreallocatedLayer(capacity=4)
    k = torch.arange(2 * 1 * 2 * 3, dtype=torch.float32).reshape(2, 1, 2, 3)
    keys, _ = layer.update(k, k)
    buffer = layer._key_buffer
    keys, values = layer.update(k[:, :, :1] + 100, k[:, :, :1] + 100)
    assert layer._key_buffer is buffer and keys.data_ptr() == buffer.data_ptr()
    assert keys.shape == (2, 1, 3, 3) and layer.get_seq_length() == 3
    torch.testing.assert_close(keys[:, :, 2], k[:, :, 0] + 100)
    torch.testing.assert_close(values[:, :, :2], k)


def test_writing_past_the_capacity_names_it() -> None:
    layer = PreallocatedLayer(capacity=2)
    k = torch.zeros(1, 1, 2, 4)
    layer.update(k, k)
    with pytest.raises(ValueError, match="holds 2 positions; 3 were written"):
        layer.update(k[:, :, :1], k[:, :, :1])
