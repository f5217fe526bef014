"""Sample packing of multimodal rows: the padded forward arguments of a batch as one row.

Shape letters: B rows, T tokens, N packed tokens (the attended tokens of all rows).

The family builds its arguments for the padded (B, T) batch first (media tensors already
concatenated in row order, M-RoPE positions from the model's ``get_rope_index`` on each
row's attended tokens); packing then keeps the attended columns of every per-token argument,
row after row, so each row keeps exactly the positions it has alone. Media tensors
(``pixel_values``, ``image_grid_thw``, ``input_features`` ...) are left as they are: the
model fills the placeholders of the packed row in order, which is row order.

Attention stays inside each row through ``transformers``' packed-sequence masks
(``attention_mask=None``): a text model derives the block-diagonal mask from 1-D positions
(1, N) that restart at 0 for each row; an M-RoPE model (Qwen2-VL, Qwen2.5-VL) takes
positions (4, 1, N) whose first axis is those 1-D text positions (read for the mask only)
and whose other three are the M-RoPE positions (with only three axes it builds no packed
mask, and rows would see each other).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from lightrft.adapters.model_parts.positions import position_ids_from_mask


def pack_model_inputs(
    kwargs: Mapping[str, Any],
    attention_mask: Tensor,
    token_keys: Sequence[str] = (),
    *,
    mrope: bool = False,
) -> dict[str, Any]:
    """``kwargs`` of a padded batch (``input_ids``, ``attention_mask`` and ``position_ids``
    (B, T) or (3, B, T), ``token_keys`` (B, T)) as one packed row (module doc)."""
    valid = attention_mask.bool()  # [B, T]
    text = position_ids_from_mask(attention_mask)[valid][None]  # [1, N]
    packed = dict(kwargs)
    packed["input_ids"] = kwargs["input_ids"][valid][None]  # [1, N]
    packed["attention_mask"] = None
    for key in token_keys:
        if key in kwargs:
            packed[key] = kwargs[key][valid][None]  # [1, N]
    if not mrope:
        packed["position_ids"] = text
        return packed
    positions: Tensor = kwargs["position_ids"]
    if positions.ndim == 2:  # text-only batch: M-RoPE repeats 1-D positions on its 3 axes
        positions = positions[None].expand(3, -1, -1)
    rope = positions[-3:, valid][:, None]  # [3, 1, N]
    packed["position_ids"] = torch.cat([text[None].to(rope.dtype), rope], 0)  # [4, 1, N]
    return packed
