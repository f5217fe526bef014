"""Weight-only int8 linear layers (per-output-channel scales) for the rollout engine's copy.

Shape letters: N output features, K input features, M rows of input.

A weight W (N, K) becomes q = round(W / s) clamped to [-127, 127] with one scale per output
channel s_n = max_k |W_nk| / 127, so |W - s q| <= s / 2 elementwise. On CPU, with K a
multiple of 8 (the kernel's layout; other widths crash it), the product runs in
``torch._weight_int8pack_mm`` (int8 weights, activations in ``compute_dtype``), which reads a
quarter of the fp32 weight bytes; elsewhere the weight is dequantized for each product.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def quantize_per_channel(weight: Tensor) -> tuple[Tensor, Tensor]:
    """(N, K) float -> int8 (N, K) and float32 scales (N,), scale = max |row| / 127."""
    w = weight.detach().float()
    scales = w.abs().amax(dim=1).clamp(min=1e-12) / 127.0
    q = torch.round(w / scales[:, None]).clamp(-127, 127).to(torch.int8)
    return q, scales


class Int8Linear(nn.Module):
    """``y = x W^T + b`` with W stored as int8 and per-channel scales (weight-only int8).

    ``compute_dtype`` is the activations' dtype inside the product (the output is cast back
    to the input's dtype).
    """

    def __init__(
        self, weight: Tensor, bias: Tensor | None, compute_dtype: torch.dtype = torch.bfloat16
    ) -> None:
        super().__init__()
        q, scales = quantize_per_channel(weight)
        self.register_buffer("qweight", q, persistent=False)
        self.register_buffer("scales", scales.to(compute_dtype), persistent=False)
        self.bias = (
            None if bias is None else nn.Parameter(bias.detach().clone(), requires_grad=False)
        )
        self.compute_dtype = compute_dtype
        self.in_features, self.out_features = weight.shape[1], weight.shape[0]

    def set_weight(self, weight: Tensor) -> None:
        """Re-quantizes from a new float weight (N, K) in place (a weight sync)."""
        q, scales = quantize_per_channel(weight.to(self.qweight.device))
        self.qweight.copy_(q)
        self.scales.copy_(scales.to(self.compute_dtype))

    def forward(self, x: Tensor) -> Tensor:
        """x (..., K) -> (..., N)."""
        flat = x.reshape(-1, self.in_features).to(self.compute_dtype)
        if self.qweight.device.type == "cpu" and self.in_features % 8 == 0:
            y = torch._weight_int8pack_mm(flat, self.qweight, self.scales)
        else:
            y = flat @ (self.qweight.to(self.compute_dtype) * self.scales[:, None]).T
        if self.bias is not None:
            y = y + self.bias.to(y.dtype)
        return y.reshape(*x.shape[:-1], self.out_features).to(x.dtype)
