"""Response-token log-probs of a causal model, in the layout of :mod:`lightrft.domain.types`.

Shape letters: B samples, T = P + R sequence tokens, R response tokens, V vocabulary.
Response token ``t`` sits in column ``T - R + t`` and is predicted by the logits of column
``T - R + t - 1``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from lightrft.domain.ports import PolicyOutput
from lightrft.domain.token_logprobs import token_logprobs
from lightrft.domain.types import SequenceBatch

LogitsFn = Callable[[Tensor, Tensor], Tensor]


def predicting_columns(batch: SequenceBatch) -> slice:
    """Columns whose outputs predict the R response tokens: ``[T - R - 1, T - 1)``."""
    tokens, responses = batch.input_ids.shape[1], batch.response_length
    if responses >= tokens:
        raise ValueError(
            f"a sequence needs at least one prompt column: T = {tokens}, R = {responses}"
        )
    return slice(tokens - responses - 1, tokens - 1)


def response_logprobs(
    logits_fn: LogitsFn,
    batch: SequenceBatch,
    device: torch.device,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
) -> PolicyOutput:
    """Log-probs (B, R) of the response tokens of ``batch`` (0 where ``response_mask`` is 0).

    ``logits_fn(input_ids (B, T), attention_mask (B, T)) -> logits (B, T, V)``. Log-probs
    and entropy come from :func:`lightrft.domain.token_logprobs.token_logprobs` of
    ``logits / temperature``; both are 0 on padding.
    """
    ids = batch.input_ids.to(device)
    keep = batch.response_mask.to(device).bool()  # [B, R]
    columns = predicting_columns(batch)
    logits = logits_fn(ids, batch.attention_mask.to(device))  # [B, T, V]
    labels = ids[:, ids.shape[1] - keep.shape[1] :].masked_fill(~keep, 0)  # [B, R]
    result = token_logprobs(
        logits[:, columns], labels, temperature=temperature, with_entropy=with_entropy
    )
    zero = torch.zeros((), dtype=result.logprobs.dtype, device=device)
    logprobs = torch.where(keep, result.logprobs, zero)
    entropy = None if result.entropy is None else torch.where(keep, result.entropy, zero)
    return PolicyOutput(logprobs, entropy)
