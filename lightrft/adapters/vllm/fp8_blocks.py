"""Block-wise FP8 (e4m3) quantization of linear weights for an FP8 rollout engine.

Each (block x block) tile of a 2-D weight W (O, I) gets its own scale s = max|W_tile| / 448
(448 is the largest e4m3 value); the engine stores q = e4m3(W_tile / s) and the dequantization
multiplier s as ``<name>_scale_inv`` of shape (ceil(O/block), ceil(I/block)), the layout of
block-quantized FP8 checkpoints (DeepSeek-V3; verl's FP8 rollout syncs this format with
128 x 128 blocks). An all-zero tile gets s = 1. Training weights stay in their own dtype;
only the copy sent to the engine is quantized, at every sync.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import torch
from torch import Tensor

E4M3_MAX = 448.0
DEFAULT_BLOCK = 128
_LINEAR = re.compile(r"\.(q|k|v|o|gate|up|down)_proj\.weight$")


def quantize_blockwise_fp8(weight: Tensor, block: int = DEFAULT_BLOCK) -> tuple[Tensor, Tensor]:
    """(q e4m3 (O, I), scale_inv float32 (ceil(O/block), ceil(I/block))) of a 2-D ``weight``."""
    if weight.dim() != 2:
        raise ValueError(f"block-wise FP8 needs a 2-D weight, got shape {tuple(weight.shape)}")
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    rows, cols = weight.shape
    br, bc = -(-rows // block), -(-cols // block)
    padded = weight.new_zeros((br * block, bc * block), dtype=torch.float32)
    padded[:rows, :cols] = weight.float()
    tiles = padded.view(br, block, bc, block)  # [BR, b, BC, b]
    amax = tiles.abs().amax(dim=(1, 3))  # [BR, BC]
    scale = torch.where(amax > 0, amax / E4M3_MAX, torch.ones_like(amax))
    q = (tiles / scale[:, None, :, None]).clamp(-E4M3_MAX, E4M3_MAX)
    q = q.view(br * block, bc * block)[:rows, :cols].to(torch.float8_e4m3fn)
    return q, scale


def dequantize_blockwise_fp8(q: Tensor, scale_inv: Tensor, block: int = DEFAULT_BLOCK) -> Tensor:
    """float32 (O, I) from :func:`quantize_blockwise_fp8`'s output."""
    rows, cols = q.shape
    expanded = scale_inv.repeat_interleave(block, 0).repeat_interleave(block, 1)[:rows, :cols]
    return q.float() * expanded


def fp8_weight_stream(
    weights: Iterable[tuple[str, Tensor]], block: int = DEFAULT_BLOCK
) -> Iterator[tuple[str, Tensor]]:
    """Decoder linear weights (``*_proj.weight``) as e4m3 plus ``*.weight_scale_inv``; every
    other tensor (embeddings, norms, LM head, biases) unchanged."""
    for name, tensor in weights:
        if _LINEAR.search(name) and tensor.dim() == 2:
            q, scale = quantize_blockwise_fp8(tensor, block)
            yield name, q
            yield f"{name}_scale_inv", scale
        else:
            yield name, tensor
