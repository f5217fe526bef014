"""Block-wise e4m3 quantization of the weights an FP8 rollout engine receives."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.vllm.fp8_blocks import (
    E4M3_MAX,
    dequantize_blockwise_fp8,
    fp8_weight_stream,
    quantize_blockwise_fp8,
)


def test_scales_are_block_amax_over_448_by_hand() -> None:
    # 4 x 4 weight, 2 x 2 blocks: block amaxes 8, 4 / 2, 0 (an all-zero block gets scale 1)
    w = torch.tensor(
        [[8.0, 1.0, 4.0, -2.0], [-1.0, 0.5, 1.0, 0.0], [2.0, 0.0, 0.0, 0.0], [0.0, -1.0, 0.0, 0.0]]
    )
    q, scale = quantize_blockwise_fp8(w, block=2)
    assert q.dtype == torch.float8_e4m3fn and q.shape == (4, 4)
    torch.testing.assert_close(scale, torch.tensor([[8 / 448, 4 / 448], [2 / 448, 1.0]]))
    assert float(q[0, 0].float()) == E4M3_MAX  # the block maximum maps to 448 exactly
    # values that are powers of two times the scale are exact in e4m3
    torch.testing.assert_close(dequantize_blockwise_fp8(q, scale, block=2), w)


@pytest.mark.parametrize("shape", [(256, 128), (130, 70), (1, 5)])
def test_round_trip_error_is_within_e4m3_precision(shape: tuple[int, int]) -> None:
    w = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    q, scale = quantize_blockwise_fp8(w)
    assert scale.shape == (-(-shape[0] // 128), -(-shape[1] // 128))
    back = dequantize_blockwise_fp8(q, scale)
    # e4m3 keeps 3 mantissa bits: relative error <= 2^-4 for normal numbers; values below
    # the smallest normal (2^-6 * scale) have absolute error <= 2^-10 * scale (subnormal step)
    bound = torch.maximum(w.abs() * 2**-4, scale.max() * torch.tensor(2.0**-9))
    assert bool(((back - w).abs() <= bound + 1e-7).all())


def test_stream_quantizes_only_decoder_linears() -> None:
    weights = [
        ("model.embed_tokens.weight", torch.ones(4, 2)),
        ("model.layers.0.self_attn.q_proj.weight", torch.ones(4, 4)),
        ("model.layers.0.input_layernorm.weight", torch.ones(4)),
        ("lm_head.weight", torch.ones(4, 2)),
    ]
    out = dict(fp8_weight_stream(weights, block=2))
    assert list(out) == [
        "model.embed_tokens.weight",
        "model.layers.0.self_attn.q_proj.weight",
        "model.layers.0.self_attn.q_proj.weight_scale_inv",
        "model.layers.0.input_layernorm.weight",
        "lm_head.weight",
    ]
    assert out["model.layers.0.self_attn.q_proj.weight"].dtype == torch.float8_e4m3fn
    assert out["lm_head.weight"].dtype == torch.float32


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="2-D"):
        quantize_blockwise_fp8(torch.ones(3))
    with pytest.raises(ValueError, match="block"):
        quantize_blockwise_fp8(torch.ones(2, 2), block=0)
