"""Position ids for padded batches, shared by every adapter that runs an HF model."""

from __future__ import annotations

from torch import Tensor


def position_ids_from_mask(attention_mask: Tensor) -> Tensor:
    """Positions counting attended tokens only. Shape: (B, T) -> (B, T), 0 on left padding."""
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
