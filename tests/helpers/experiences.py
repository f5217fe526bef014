"""Experiences for optimizer tests: a batch with a fixed advantage ramp and given groups."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from lightrft.domain.types import Experience, SequenceBatch


def ramp_experience(batch: SequenceBatch, group_index: Sequence[int] | Tensor) -> Experience:
    """On-policy experience whose advantages rise linearly from -1 (row 0) to 1 (last row)."""
    b, r = batch.response_mask.shape
    advantages = torch.linspace(-1.0, 1.0, b)[:, None].expand(b, r).contiguous()
    return Experience(
        sequences=batch,
        old_logprobs=None,
        advantages=advantages,
        returns=advantages,
        rewards=torch.zeros(b),
        group_index=torch.as_tensor(group_index),
    )
