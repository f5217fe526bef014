"""logits_at_columns gives the full forward's logits at the chosen columns, with the LM head
on those columns only when the model takes ``logits_to_keep`` and after it when not."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from lightrft.adapters.model_parts.column_logits import logits_at_columns
from tests.unit.adapters.hf.hf_tiny import tiny_model


class _NoKeep(nn.Module):
    """The same LM behind a forward that does not take ``logits_to_keep``."""

    def __init__(self, lm: nn.Module) -> None:
        super().__init__()
        self.lm = lm

    def forward(self, input_ids: Tensor, attention_mask: Tensor, use_cache: bool) -> Any:
        return self.lm(input_ids=input_ids, attention_mask=attention_mask, use_cache=use_cache)


def test_columns_equal_the_full_logits_both_ways() -> None:
    lm = tiny_model(3).eval()
    ids = torch.randint(3, 60, (2, 9))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    keep = torch.tensor([2, 5, 8])
    with torch.no_grad():
        full = lm(input_ids=ids, attention_mask=mask, use_cache=False).logits
        kept = logits_at_columns(lm, keep, input_ids=ids, attention_mask=mask)
        wrapped = logits_at_columns(_NoKeep(lm), keep, input_ids=ids, attention_mask=mask)
    assert kept.shape == (2, 3, full.shape[-1])
    torch.testing.assert_close(kept, full[:, keep], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(wrapped, full[:, keep], rtol=0, atol=0)
