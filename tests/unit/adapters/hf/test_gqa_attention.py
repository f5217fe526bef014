"""gqa_decode_attention: decode steps read grouped K/V heads in place with the same logits
as transformers' sdpa (which repeats them), and the model's attention is restored after."""

from __future__ import annotations

from contextlib import nullcontext

import pytest
import torch

from lightrft.adapters.hf.gqa_attention import GQA_SDPA, gqa_decode_attention
from lightrft.adapters.hf.preallocated_cache import preallocated_cache
from tests.unit.adapters.hf.hf_tiny import tiny_model

CPU = torch.device("cpu")


def _decode_logits(model: torch.nn.Module, switch: bool) -> list[torch.Tensor]:
    """Prefill 3 left-padded rows, then 5 decode steps; the last-position logits of each."""
    torch.manual_seed(0)
    ids = torch.randint(3, 250, (3, 6))
    mask = torch.ones(3, 11, dtype=torch.long)
    mask[0, :3] = 0  # left padding: sdpa gets a mask, so transformers would repeat K/V
    positions = (mask[:, :6].cumsum(-1) - 1).clamp(min=0)
    cache = preallocated_cache(model.config, 11)
    with torch.no_grad():
        out = model(ids, attention_mask=mask[:, :6], position_ids=positions, past_key_values=cache)
        logits = [out.logits[:, -1]]
        position = positions[:, -1:] + 1
        for step in range(5):
            token = logits[-1].argmax(-1, keepdim=True)
            with gqa_decode_attention(model.config, CPU) if switch else nullcontext():
                out = model(
                    token,
                    attention_mask=mask[:, : 7 + step],
                    position_ids=position,
                    past_key_values=cache,
                )
            logits.append(out.logits[:, -1])
            position = position + 1
    return logits


def test_grouped_heads_in_place_give_the_repeated_heads_logits() -> None:
    model = tiny_model()
    assert model.config.num_key_value_heads < model.config.num_attention_heads
    for a, b in zip(_decode_logits(model, False), _decode_logits(model, True), strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


def test_switches_sdpa_on_cpu_only_and_restores_it() -> None:
    model = tiny_model()
    with gqa_decode_attention(model.config, CPU) as switched:
        assert switched and model.config._attn_implementation == GQA_SDPA
    assert model.config._attn_implementation == "sdpa"
    with gqa_decode_attention(model.config, torch.device("cuda")) as switched:
        assert not switched and model.config._attn_implementation == "sdpa"
    eager = tiny_model(attn="eager")
    with gqa_decode_attention(eager.config, CPU) as switched:
        assert not switched and eager.config._attn_implementation == "eager"


def test_restores_the_attention_after_an_error() -> None:
    model = tiny_model()
    with pytest.raises(RuntimeError, match="boom"), gqa_decode_attention(model.config, CPU):
        raise RuntimeError("boom")
    assert model.config._attn_implementation == "sdpa"
