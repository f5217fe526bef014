"""Supervised fine-tuning examples and their batches.

An :class:`SftExample` is one tokenized training row split at its first trained token:
``prompt_ids`` (context only, never trained) and ``response_ids`` with a per-token
``loss_mask`` (1 where the token is trained: assistant turns of a chat, the completion of a
prompt/completion row; 0 for later user/system turns). :func:`sft_batch` lays examples out
as a :class:`~lightrft.domain.types.SequenceBatch` (left-padded prompts, right-padded
responses), so any ``Policy`` gives the log-probs the loss needs; its ``response_mask`` is
the loss mask. A row with images or audio carries its opaque media payload (``multimodal``,
see :mod:`~lightrft.domain.modality`); its ids hold the media placeholders already expanded
(never trained), and the batch hands one payload per row to the policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from lightrft.domain.modality import Payload
from lightrft.domain.types import SequenceBatch


@dataclass(frozen=True)
class SftExample:
    """One supervised row. ``loss_mask`` has one 0/1 entry per response token."""

    uid: str
    prompt_ids: tuple[int, ...]
    response_ids: tuple[int, ...]
    loss_mask: tuple[int, ...]
    multimodal: Payload = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.prompt_ids:
            raise ValueError(f"SFT example {self.uid!r} has no prompt tokens")
        if len(self.loss_mask) != len(self.response_ids):
            raise ValueError(
                f"SFT example {self.uid!r}: {len(self.response_ids)} response tokens but "
                f"{len(self.loss_mask)} loss-mask entries"
            )
        if not any(self.loss_mask):
            raise ValueError(f"SFT example {self.uid!r} has no trained token")

    @property
    def num_tokens(self) -> int:
        """Prompt plus response tokens."""
        return len(self.prompt_ids) + len(self.response_ids)

    @property
    def num_trained(self) -> int:
        """Tokens that carry loss."""
        return sum(self.loss_mask)


def sft_batch(examples: Sequence[SftExample], pad_token_id: int = 0) -> SequenceBatch:
    """Examples as one batch: ``input_ids`` (B, P + R), ``response_mask`` (B, R) the loss mask.

    P is the longest prompt (left-padded), R the longest response (right-padded).
    """
    if not examples:
        raise ValueError("cannot batch zero SFT examples")
    p = max(len(e.prompt_ids) for e in examples)
    r = max(len(e.response_ids) for e in examples)
    ids = torch.full((len(examples), p + r), pad_token_id, dtype=torch.long)
    attention = torch.zeros((len(examples), p + r), dtype=torch.long)
    loss_mask = torch.zeros((len(examples), r), dtype=torch.long)
    for row, e in enumerate(examples):
        lp, lr = len(e.prompt_ids), len(e.response_ids)
        ids[row, p - lp : p] = torch.tensor(e.prompt_ids)
        ids[row, p : p + lr] = torch.tensor(e.response_ids, dtype=torch.long)
        attention[row, p - lp : p + lr] = 1
        loss_mask[row, :lr] = torch.tensor(e.loss_mask, dtype=torch.long)
    payloads = tuple(e.multimodal for e in examples)
    return SequenceBatch(ids, attention, loss_mask, multimodal=payloads)


def masked_nll_sum(logprobs: Tensor, loss_mask: Tensor) -> Tensor:
    """Sum of -log p over trained tokens. Shapes: logprobs, loss_mask (B, R) -> scalar."""
    return -(logprobs * loss_mask.to(logprobs.dtype)).sum()
