"""Turning prompts and completions into padded tensors, and splitting batches.

Shapes: B samples, P prompt tokens, R response tokens, T = P + R. Prompts are left-padded
and responses right-padded, so every response starts at column P (see
:mod:`lightrft.domain.types`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from lightrft.domain.types import Completion, PromptRecord, SequenceBatch


@dataclass(frozen=True)
class RolloutTensors:
    """Padded tensors of a batch of completions."""

    sequences: SequenceBatch
    rollout_logprobs: Tensor | None  # (B, R), 0 on padding; None if the engine gave none
    response_lengths: Tensor  # (B,) long


def build_rollout_tensors(
    prompts: Sequence[PromptRecord], completions: Sequence[Completion], pad_token_id: int
) -> RolloutTensors:
    """Pads ``completions`` (each answering ``prompts[c.prompt_index]``) into one batch.

    Each row carries its prompt's multimodal payload (``SequenceBatch.multimodal``), so the
    policy, the reference and the critic see the images / audio the engine saw.
    """
    if not completions:
        raise ValueError("completions is empty; nothing to build")
    b = len(completions)
    p = max(len(prompts[c.prompt_index].prompt_token_ids) for c in completions)
    r = max(1, max(len(c.token_ids) for c in completions))
    input_ids = torch.full((b, p + r), pad_token_id, dtype=torch.long)
    attention_mask = torch.zeros((b, p + r), dtype=torch.long)
    response_mask = torch.zeros((b, r), dtype=torch.long)
    have_logprobs = all(c.logprobs is not None for c in completions)
    logprobs = torch.zeros((b, r), dtype=torch.float32)
    for i, c in enumerate(completions):
        prompt = prompts[c.prompt_index].prompt_token_ids
        n = len(c.token_ids)
        input_ids[i, p - len(prompt) : p] = torch.tensor(prompt, dtype=torch.long)
        attention_mask[i, p - len(prompt) : p + n] = 1
        if n:
            input_ids[i, p : p + n] = torch.tensor(c.token_ids, dtype=torch.long)
            response_mask[i, :n] = 1
            if have_logprobs and c.logprobs is not None:
                logprobs[i, :n] = torch.tensor(c.logprobs, dtype=torch.float32)
    lengths = response_mask.sum(dim=1)
    if bool((lengths == 0).any()):
        raise ValueError(
            f"completion {int((lengths == 0).nonzero()[0])} has no tokens; an engine must "
            "return at least the stop token"
        )
    return RolloutTensors(
        sequences=SequenceBatch(
            input_ids,
            attention_mask,
            response_mask,
            multimodal=tuple(prompts[c.prompt_index].multimodal for c in completions),
        ),
        rollout_logprobs=logprobs if have_logprobs else None,
        response_lengths=lengths,
    )


def split_by_count(indices: Tensor, size: int) -> list[Tensor]:
    """Consecutive chunks of ``indices`` (1-D) with at most ``size`` entries each."""
    return list(torch.split(indices, size))


def split_by_tokens(indices: Tensor, tokens: Tensor, budget: int) -> list[Tensor]:
    """Consecutive chunks of ``indices`` whose ``tokens`` (per sample) sum to <= ``budget``.

    Shape: indices (N,), tokens (N,) aligned with indices. A sample longer than the budget
    gets a micro-batch of its own. Order is kept, so the union of the chunks is ``indices``.
    """
    chunks: list[Tensor] = []
    start, used = 0, 0
    counts = tokens.tolist()
    for i, count in enumerate(counts):
        if i > start and used + count > budget:
            chunks.append(indices[start:i])
            start, used = i, 0
        used += count
    chunks.append(indices[start:])
    return chunks
