"""Building a :class:`SequenceBatch` from token lists, for tests.

Shape letters: B samples, P longest prompt, R longest response, T = P + R. Prompts are
left-padded and responses right-padded with ``pad_id`` (layout of
:mod:`lightrft.domain.types`); ``prompt_padding`` adds extra left columns to check that
padding changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from lightrft.domain.types import Completion, PromptRecord, SequenceBatch


def make_sequence_batch(
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    *,
    pad_id: int = 0,
    prompt_padding: int = 0,
    response_padding: int = 0,
) -> SequenceBatch:
    """Left-padded prompts then right-padded responses. Shapes (B, T) and (B, R)."""
    if len(prompts) != len(responses):
        raise ValueError(f"{len(prompts)} prompts but {len(responses)} responses")
    if any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt needs at least one token")
    width_p = max(len(p) for p in prompts) + prompt_padding
    width_r = max((len(r) for r in responses), default=0) + response_padding
    ids = torch.full((len(prompts), width_p + width_r), pad_id, dtype=torch.long)
    attention = torch.zeros_like(ids)
    response_mask = torch.zeros((len(prompts), width_r), dtype=torch.long)
    for row, (prompt, response) in enumerate(zip(prompts, responses, strict=True)):
        ids[row, width_p - len(prompt) : width_p] = torch.tensor(prompt, dtype=torch.long)
        attention[row, width_p - len(prompt) : width_p + len(response)] = 1
        if response:
            ids[row, width_p : width_p + len(response)] = torch.tensor(response, dtype=torch.long)
            response_mask[row, : len(response)] = 1
    return SequenceBatch(input_ids=ids, attention_mask=attention, response_mask=response_mask)


def completions_batch(
    prompts: Sequence[PromptRecord], completions: Sequence[Completion], *, pad_id: int = 0
) -> SequenceBatch:
    """The batch of ``completions`` (each answering ``prompts[c.prompt_index]``)."""
    return make_sequence_batch(
        [prompts[c.prompt_index].prompt_token_ids for c in completions],
        [c.token_ids for c in completions],
        pad_id=pad_id,
    )
