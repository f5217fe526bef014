"""Response-token log-probs of a Hugging Face causal LM, padded or sample-packed.

Shape letters: B samples, T = P + R tokens (left-padded prompt, right-padded response), R
response tokens, V vocabulary, N packed tokens, K scored response tokens, H hidden size.

Only the positions that predict a response token go through the LM head: the model's
``logits_to_keep`` argument slices the hidden states before it, so the logits are (B, R, V)
(padded) or (1, K, V) (packed) rather than (B, T, V). Log-probs and entropies come from the
domain's chunked :func:`~lightrft.domain.token_logprobs.token_logprobs`.

Position ids count the attended tokens of each row (``cumsum(attention_mask) - 1``), so a
left-padded row gets the same positions as the unpadded sequence. Packing concatenates the
attended tokens of every row into one row of N tokens whose position ids restart at 0 for
each sample, and passes ``attention_mask=None``: ``transformers`` (>= 4.54, all attention
kernels: eager, sdpa, flash-attention) then builds a block-diagonal causal mask from the
position-id resets, so samples do not see each other and the results equal the padded path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor, nn

from lightrft.adapters.hf.fused_head import FusedHeadMode, fused_head_logprobs, use_fused_head
from lightrft.adapters.model_parts.column_logits import logits_at_columns
from lightrft.adapters.model_parts.positions import position_ids_from_mask
from lightrft.domain.ports import PolicyOutput
from lightrft.domain.token_logprobs import token_logprobs
from lightrft.domain.types import SequenceBatch

__all__ = ["position_ids_from_mask", "response_logprobs"]


def response_logprobs(
    model: nn.Module,
    batch: SequenceBatch,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    packing: bool = False,
    chunk_size: int = 1024,
    fused_head: FusedHeadMode = "auto",
) -> PolicyOutput:
    """Log-probs (B, R) of the response tokens of ``batch`` under ``model`` (0 on padding).

    A response token counts where ``response_mask`` and the attention mask are both set;
    ``entropy`` (B, R) is returned when ``with_entropy``. ``fused_head`` as in
    :func:`logprobs_from_inputs`. Autograd follows the caller's grad mode.
    """
    _check_batch(batch)
    valid = batch.attention_mask.bool()
    positions = position_ids_from_mask(batch.attention_mask)  # [B, T]
    inputs: dict[str, Any] = (
        {
            "input_ids": batch.input_ids[valid][None],  # [1, N]
            "attention_mask": None,
            "position_ids": positions[valid][None],  # [1, N] restarting per sample
        }
        if packing
        else {
            "input_ids": batch.input_ids,
            "attention_mask": batch.attention_mask,
            "position_ids": positions,
        }
    )
    return logprobs_from_inputs(
        model,
        batch,
        inputs,
        temperature=temperature,
        with_entropy=with_entropy,
        chunk_size=chunk_size,
        packed=packing,
        fused_head=fused_head,
    )


def logprobs_from_inputs(
    model: nn.Module,
    batch: SequenceBatch,
    inputs: Mapping[str, Any],
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    chunk_size: int = 1024,
    suppressed: Tensor | None = None,
    packed: bool = False,
    fused_head: FusedHeadMode = "auto",
) -> PolicyOutput:
    """:func:`response_logprobs` on model inputs the caller built (multimodal adapters build
    them from the batch's payloads).

    ``inputs`` are the forward's keyword arguments: for the (B, T) rows of ``batch``
    (``input_ids``, ``attention_mask``, ``position_ids`` and e.g. ``pixel_values``), or with
    ``packed`` for one row (1, N) of the attended tokens of every row in row order (position
    ids restarting per row, ``attention_mask=None``); then only the predictors of the K
    scored tokens reach the LM head. ``suppressed`` (S,) token ids are taken out of the
    distribution (:func:`suppress_tokens`). ``fused_head`` (auto, on, off: see
    :data:`~lightrft.adapters.hf.fused_head.FusedHeadMode`): run the decoder and the LM
    head fused with the log-softmax, never holding the (K, V) logits, where the model and
    inputs allow it and nothing is suppressed (:mod:`~lightrft.adapters.hf.fused_head`; the same
    values up to float rounding). Returns (B, R) tensors, 0 where not scored.
    """
    check_prompt_column(batch)
    t, r = batch.input_ids.shape[1], batch.response_length
    scored = scored_mask(batch)
    if packed:
        lengths = batch.attention_mask.bool().sum(-1)  # [B]
        offsets = torch.cumsum(lengths, 0) - lengths  # [B] first packed index of each row
        packed_index = offsets[:, None] + position_ids_from_mask(batch.attention_mask)  # [B, T]
        keep = packed_index[:, t - r - 1 : t - 1][scored]  # [K] predictor of each scored token
        labels = batch.input_ids[:, t - r :][scored][None]  # [1, K]
    else:
        keep = torch.arange(t - r - 1, t - 1, device=batch.input_ids.device)  # [R]
        labels = batch.input_ids[:, t - r :]  # [B, R]
    logit_rows = keep.numel() if packed else labels.numel()  # the unfused logits' rows
    if suppressed is None and use_fused_head(fused_head, model, inputs, logit_rows):
        return _fused_logprobs(
            model,
            inputs,
            keep,
            labels,
            scored,
            packed=packed,
            temperature=temperature,
            with_entropy=with_entropy,
            chunk_size=chunk_size,
        )
    logits = logits_at_columns(model, keep, **inputs)  # [1, K, V] or [B, R, V]
    if suppressed is not None:
        logits = suppress_tokens(logits, suppressed)
    out = token_logprobs(
        logits, labels, temperature=temperature, with_entropy=with_entropy, chunk_size=chunk_size
    )
    if packed:
        return PolicyOutput(
            _scatter(out.logprobs[0], scored),
            None if out.entropy is None else _scatter(out.entropy[0], scored),
        )
    scored = scored.to(out.logprobs.device)
    zero = torch.zeros((), dtype=out.logprobs.dtype, device=out.logprobs.device)
    return PolicyOutput(
        torch.where(scored, out.logprobs, zero),
        None if out.entropy is None else torch.where(scored, out.entropy, zero),
    )


def _fused_logprobs(
    model: nn.Module,
    inputs: Mapping[str, Any],
    keep: Tensor,
    labels: Tensor,
    scored: Tensor,
    *,
    packed: bool,
    temperature: float,
    with_entropy: bool,
    chunk_size: int,
) -> PolicyOutput:
    """:func:`logprobs_from_inputs` through the fused LM head: only the K scored tokens'
    hidden states meet the head. Shape: keep (K,) packed or (R,); labels (1, K) packed or
    (B, R); scored (B, R). Returns (B, R) tensors, 0 where not scored."""

    def select(hidden: Tensor) -> Tensor:  # [1, N, H] or [B, T, H] -> [K, H]
        return hidden[0, keep] if packed else hidden[:, keep][scored.to(hidden.device)]

    out = fused_head_logprobs(
        model,
        inputs,
        select,
        labels[0] if packed else labels[scored],
        temperature=temperature,
        with_entropy=with_entropy,
        chunk_size=chunk_size,
    )
    return PolicyOutput(
        _scatter(out.logprobs, scored),
        None if out.entropy is None else _scatter(out.entropy, scored),
    )


SUPPRESSED_LOGIT = -1e4
"""Logit given to tokens that may never be generated: exp(-1e4 - max) is 0 in every float
dtype, and finite, so 0 * log p stays 0 in entropies (fp16's range is +-65504)."""


def suppress_tokens(logits: Tensor, token_ids: Tensor) -> Tensor:
    """``logits`` (..., V) with the columns ``token_ids`` (S,) set to
    :data:`SUPPRESSED_LOGIT` (a multimodal model's media placeholders: generating one
    would break the next forward, whose placeholders must match its media)."""
    return logits.index_fill(-1, token_ids.to(logits.device), SUPPRESSED_LOGIT)


def scored_mask(batch: SequenceBatch) -> Tensor:
    """(B, R) bool: response tokens that are attended (the ones that get a log-prob)."""
    return batch.response_mask.bool() & batch.attention_mask[:, -batch.response_length :].bool()


def _check_batch(batch: SequenceBatch) -> None:
    if batch.multimodal:
        rows = [i for i, payload in enumerate(batch.multimodal) if payload]
        keys = sorted({key for i in rows for key in batch.multimodal[i]})
        raise ValueError(
            f"this policy reads text only (model.modality=text), but rows {rows[:8]} of the "
            f"batch carry multimodal inputs {keys}; use a vision-language or audio-language "
            "model (model.modality) or drop the media keys from the data"
        )
    check_prompt_column(batch)


def check_prompt_column(batch: SequenceBatch) -> None:
    """Raises ``ValueError`` unless ``batch`` has a prompt column before its responses."""
    if batch.response_length >= batch.input_ids.shape[1]:
        raise ValueError(
            f"a response of {batch.response_length} columns needs at least one prompt column "
            f"before it; input_ids has {batch.input_ids.shape[1]}"
        )


def _scatter(values: Tensor, where: Tensor) -> Tensor:
    """Places ``values`` (K,) at the True entries of ``where`` (B, R); zeros elsewhere."""
    out = values.new_zeros(where.shape)
    return out.masked_scatter(where, values)
