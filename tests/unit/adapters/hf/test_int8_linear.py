"""Weight-only int8 layers: the quantization's error bound, the product, re-quantizing at a
weight sync (a tied LM head included)."""

from __future__ import annotations

import torch
from torch import nn

from lightrft.adapters.hf.int8_linear import Int8Linear, quantize_per_channel
from lightrft.adapters.hf.quantized_rollout import quantize_linears
from tests.unit.adapters.hf.hf_tiny import tiny_model


def test_per_channel_scales_by_hand() -> None:
    w = torch.tensor([[1.27, -0.635, 0.0], [-2.54, 1.0, 0.02]])
    q, s = quantize_per_channel(w)
    # row 0: s = 1.27 / 127 = 0.01 -> q = 127, -63.5 -> -64 (round half to even: -64), 0
    # row 1: s = 2.54 / 127 = 0.02 -> q = -127, 50, 1
    torch.testing.assert_close(s, torch.tensor([0.01, 0.02]))
    assert q.tolist() == [[127, -64, 0], [-127, 50, 1]]
    assert ((q.float() * s[:, None] - w).abs() <= s[:, None] / 2 + 1e-7).all()


def test_product_within_the_rounding_bound() -> None:
    torch.manual_seed(0)
    linear = nn.Linear(64, 48)
    x = torch.randn(5, 3, 64)
    layer = Int8Linear(linear.weight, linear.bias, compute_dtype=torch.float32)
    y = layer(x)
    assert y.shape == (5, 3, 48) and y.dtype == torch.float32
    _, s = quantize_per_channel(linear.weight)
    # |x (W - sq)^T| <= sum_k |x_k| s_n / 2
    bound = x.abs().sum(-1, keepdim=True) * s / 2 + 1e-4
    assert ((y - linear(x)).abs() <= bound).all()


def test_sync_requantizes_and_reaches_a_tied_head() -> None:
    model = tiny_model(0, tie=True)
    targets = quantize_linears(model, compute_dtype=torch.float32)
    assert "lm_head.weight" in targets.names and "model.embed_tokens.weight" in targets.names
    assert not any(type(m) is nn.Linear for m in model.modules())
    new_embedding = torch.randn(259, 32)
    own = frozenset(n for n, _ in model.named_parameters())
    passed = dict(targets.route([("model.embed_tokens.weight", new_embedding)], own))
    assert set(passed) == {"model.embed_tokens.weight"}  # the float embedding is copied too
    head = model.lm_head
    q, s = quantize_per_channel(new_embedding)
    assert torch.equal(head.qweight, q) and torch.equal(head.scales, s)
