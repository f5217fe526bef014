"""Turning prompts and completions into padded tensors, and splitting batches.

Shapes: B samples, P prompt tokens, R response tokens, T = P + R. Prompts are left-padded
and responses right-padded, so every response starts at column P (see
:mod:`lightrft.domain.types`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import structlog
import torch
from torch import Tensor

from lightrft.domain.ports import Collective
from lightrft.domain.token_budget import plan_token_budget
from lightrft.domain.types import Completion, Experience, PromptRecord, SequenceBatch

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RolloutTensors:
    """Padded tensors of a batch of completions."""

    sequences: SequenceBatch
    rollout_logprobs: Tensor | None  # (B, R), 0 on padding; None if the engine gave none
    response_lengths: Tensor  # (B,) long


def prompt_ids_of(prompts: Sequence[PromptRecord], completion: Completion) -> tuple[int, ...]:
    """The ids ``completion`` follows: its own (a gateway row), else its prompt's."""
    own = completion.prompt_token_ids
    return own if own is not None else prompts[completion.prompt_index].prompt_token_ids


def build_rollout_tensors(
    prompts: Sequence[PromptRecord], completions: Sequence[Completion], pad_token_id: int
) -> RolloutTensors:
    """Pads ``completions`` (each answering ``prompts[c.prompt_index]``) into one batch.

    Each row carries its prompt's multimodal payload (``SequenceBatch.multimodal``; the
    completion's own when it has one: an episode's image observations), so the policy, the
    reference and the critic see the images / audio the engine saw.
    """
    if not completions:
        raise ValueError("completions is empty; nothing to build")
    b = len(completions)
    p = max(len(prompt_ids_of(prompts, c)) for c in completions)
    r = max(1, max(len(c.token_ids) for c in completions))
    input_ids = torch.full((b, p + r), pad_token_id, dtype=torch.long)
    attention_mask = torch.zeros((b, p + r), dtype=torch.long)
    response_mask = torch.zeros((b, r), dtype=torch.long)
    have_logprobs = all(c.logprobs is not None for c in completions)
    logprobs = torch.zeros((b, r), dtype=torch.float32)
    for i, c in enumerate(completions):
        prompt = prompt_ids_of(prompts, c)
        n = len(c.token_ids)
        input_ids[i, p - len(prompt) : p] = torch.tensor(prompt, dtype=torch.long)
        attention_mask[i, p - len(prompt) : p + n] = 1
        if n:
            input_ids[i, p : p + n] = torch.tensor(c.token_ids, dtype=torch.long)
            response_mask[i, :n] = torch.tensor(c.trained_mask, dtype=torch.long)
            if have_logprobs and c.logprobs is not None:
                logprobs[i, :n] = torch.tensor(c.logprobs, dtype=torch.float32)
    lengths = response_mask.sum(dim=1)
    if bool((lengths == 0).any()):
        raise ValueError(
            f"completion {int((lengths == 0).nonzero()[0])} has no tokens (none trained); an engine "
            "must return at least the stop token"
        )
    return RolloutTensors(
        sequences=SequenceBatch(
            input_ids,
            attention_mask,
            response_mask,
            multimodal=tuple(
                prompts[c.prompt_index].multimodal if c.multimodal is None else c.multimodal
                for c in completions
            ),
        ),
        rollout_logprobs=logprobs if have_logprobs else None,
        response_lengths=lengths,
    )


def split_by_count(indices: Tensor, size: int) -> list[Tensor]:
    """Consecutive chunks of ``indices`` (1-D) with at most ``size`` entries each."""
    return list(torch.split(indices, size))


def agreed_max(value: int, collective: Collective) -> int:
    """The largest ``value`` over the data-parallel ranks (every rank calls it)."""
    if collective.world_size == 1:
        return value
    slots = torch.zeros(collective.world_size, dtype=torch.float64)
    slots[collective.rank] = value
    return int(collective.all_reduce_sum(slots).max())


def split_by_token_budget(
    rows: Tensor,
    tokens: Tensor,
    budget: int,
    collective: Collective,
    *,
    groups: Tensor | None = None,
) -> list[Tensor]:
    """Balanced micro-batches of ``rows`` holding at most ``budget`` tokens each, as many on
    every rank (collective: every rank calls it once per split).

    Shapes: rows, tokens (attended tokens per sample), groups (prompt per sample) (N,).
    Returns index tensors into ``rows``' values, each sorted by position in ``rows``; the
    ranks that need fewer micro-batches than the busiest one get empty tensors at the end
    (see :mod:`lightrft.domain.token_budget`). A sample longer than the budget runs alone
    and ``batching.sample_over_token_budget`` is logged.
    """
    lengths = [int(n) for n in tokens.tolist()]
    group_list = None if groups is None else [int(g) for g in groups.tolist()]
    local = plan_token_budget(lengths, budget, groups=group_list)
    count = agreed_max(local.count, collective)
    plan = (
        local
        if count == local.count
        else plan_token_budget(lengths, budget, groups=group_list, count=count)
    )
    if plan.oversized:
        log.warning(
            "batching.sample_over_token_budget",
            budget=budget,
            samples=len(plan.oversized),
            longest=max(lengths[i] for i in plan.oversized),
        )
    return [rows[torch.tensor(batch, dtype=torch.long)] for batch in plan.batches]


def trim_padding(batch: SequenceBatch) -> SequenceBatch:
    """``batch`` without the prompt columns no row attends (left) and the response columns
    no row attends (right). Shape: (B, T) -> (B, T') with T' = P' + R', R' >= 1.

    The policy's positions count attended tokens, so log-probs are the same functions of
    the weights; a micro-batch of short samples then costs what its samples hold. A batch
    with multimodal inputs or no rows is returned as it is.
    """
    if batch.multimodal or batch.input_ids.shape[0] == 0:
        return batch
    attn = batch.attention_mask.bool()
    p = attn.shape[1] - batch.response_length
    used = attn.any(dim=0)  # [T]
    prompt_used = used[:p].nonzero()
    start = int(prompt_used[0]) if len(prompt_used) else p - 1
    response_used = used[p:].nonzero()
    r = int(response_used[-1]) + 1 if len(response_used) else 1
    return replace(
        batch,
        input_ids=batch.input_ids[:, start : p + r],
        attention_mask=batch.attention_mask[:, start : p + r],
        response_mask=batch.response_mask[:, :r],
    )


def trim_experience(experience: Experience) -> Experience:
    """``experience`` with :func:`trim_padding` applied to its sequences and every (B, R)
    tensor cut to the kept R' response columns."""
    seq = trim_padding(experience.sequences)
    r = seq.response_length
    updates: dict[str, Any] = {"sequences": seq}
    for f in fields(experience):
        value = getattr(experience, f.name)
        if isinstance(value, Tensor) and value.dim() == 2:
            updates[f.name] = value[:, :r]
    return replace(experience, **updates)
