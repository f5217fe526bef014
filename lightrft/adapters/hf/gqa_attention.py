"""One-token decode attention that lets SDPA read grouped key/value heads in place.

Shape letters: B rows, H query heads, K key/value heads (H = g x K), L positions held,
D head dim.

``transformers``' ``sdpa`` attention passes ``enable_gqa`` to
``torch.nn.functional.scaled_dot_product_attention`` only when there is no attention mask;
with one (every left-padded batch) it first copies each layer's whole cache g times
(``repeat_kv``: (B, K, L, D) -> (B, H, L, D)). In a decode step that copy is the largest
memory traffic after the weights, and it grows with the generated length. PyTorch's CPU
flash-attention kernel takes grouped heads with a mask, and gives the same values as the
repeated heads (``tests/unit/adapters/hf/test_gqa_attention.py``).

:func:`gqa_decode_attention` switches a model's ``sdpa`` attention to that path for the
duration of a ``with`` block; forwards with more than one query position (prefills) keep
``transformers``' own function.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor
from transformers import PretrainedConfig
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

GQA_SDPA = "lightrft_gqa_sdpa"


def gqa_sdpa_attention(
    module: torch.nn.Module,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None,
    **kw: Any,
) -> tuple[Tensor, None]:
    """``transformers``' sdpa attention (``dropout``, ``scaling`` and the rest as keywords,
    as the models pass them), reading grouped K/V heads in place when ``query`` holds one
    position. Shapes: query (B, H, 1, D), key/value (B, K, L, D), mask (B, 1, 1, L) or
    None -> (B, 1, H, D)."""
    if query.shape[2] != 1 or kw.get("position_bias") is not None:
        return sdpa_attention_forward(module, query, key, value, mask, **kw)
    out = torch.nn.functional.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=mask,
        dropout_p=kw.get("dropout", 0.0),
        scale=kw.get("scaling"),
        enable_gqa=query.shape[1] != key.shape[1],
    )
    return out.transpose(1, 2).contiguous(), None


ALL_ATTENTION_FUNCTIONS.register(GQA_SDPA, gqa_sdpa_attention)
ALL_MASK_ATTENTION_FUNCTIONS.register(GQA_SDPA, sdpa_mask)


@contextmanager
def gqa_decode_attention(config: PretrainedConfig, device: torch.device) -> Iterator[bool]:
    """Within the block, a model with ``config`` runs :func:`gqa_sdpa_attention` instead of
    ``sdpa`` (CPU only: on CUDA a masked grouped call may fall back to the math kernel).
    Yields whether it switched; restores the previous implementation on exit."""
    previous = config._attn_implementation
    switch = previous == "sdpa" and device.type == "cpu"
    if switch:
        config._attn_implementation = GQA_SDPA
    try:
        yield switch
    finally:
        if switch:
            config._attn_implementation = previous
