"""The layout of a prefix-shared forward: which rows share a prompt, and the packed tensors.

Shape letters as in :mod:`lightrft.adapters.hf.prefix_sharing`: B samples, T = P + R
columns, R response columns, U distinct prompts (= packed rows), N tokens per packed row,
K scored response tokens.

:func:`group_prompts` groups the rows of a batch by their unpadded prompt tokens;
:func:`plan_prefix_sharing` builds the packed ids, position ids, 4-D attention mask and the
gather indices (which packed position predicts each scored response token) that
:func:`~lightrft.adapters.hf.prefix_sharing.prefix_shared_logprobs` runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from lightrft.domain.types import SequenceBatch

DEFAULT_MAX_ROW_TOKENS = 4096
"""Longest packed row "auto" shares (the dense mask grows with its square)."""

_PROMPT, _PADDING = 0, -1  # segment ids; the response of sample b is segment b + 1


@dataclass(frozen=True)
class PromptGroups:
    """The samples of a batch grouped by equal unpadded prompt.

    ``group`` (B,): packed row of each sample, numbered by first appearance;
    ``first_rows`` (U,): the first sample of each group; ``prompt_lengths``,
    ``response_lengths`` (B,): attended tokens; ``row_lengths`` (U,): tokens of each packed row.
    """

    group: Tensor
    first_rows: Tensor
    prompt_lengths: Tensor
    response_lengths: Tensor
    row_lengths: Tensor

    @property
    def count(self) -> int:
        """U, the number of distinct prompts."""
        return int(self.first_rows.shape[0])

    @property
    def longest_row(self) -> int:
        """N, the length of the longest packed row (0 for an empty batch)."""
        return int(self.row_lengths.max()) if self.count else 0


def group_prompts(batch: SequenceBatch) -> PromptGroups:
    """Groups the samples of ``batch`` whose attended prompt tokens are equal."""
    ids, attn = batch.input_ids, batch.attention_mask.bool()
    b, p = ids.shape[0], ids.shape[1] - batch.response_length
    prompt_attn = attn[:, :p]
    canonical = ids[:, :p].masked_fill(~prompt_attn, -1)  # [B, P]; -1 is never a token id
    unique, by_value = torch.unique(canonical, dim=0, return_inverse=True)  # [B] sorted ids
    u = unique.shape[0]
    rows = torch.arange(b, device=ids.device)
    first = torch.full((u,), b, dtype=torch.long, device=ids.device)
    first = first.scatter_reduce(0, by_value, rows, reduce="amin")  # [U] by sorted id
    renumber = torch.empty_like(first)
    renumber[first.argsort()] = torch.arange(u, device=ids.device)  # sorted id -> appearance
    group = renumber[by_value]
    prompt_lengths = prompt_attn.sum(-1)
    response_lengths = attn[:, p:].sum(-1)
    first_rows = first.sort().values
    responses = torch.zeros(u, dtype=torch.long, device=ids.device).index_add_(
        0, group, response_lengths
    )
    return PromptGroups(
        group, first_rows, prompt_lengths, response_lengths, prompt_lengths[first_rows] + responses
    )


def worth_sharing(groups: PromptGroups, max_row_tokens: int = DEFAULT_MAX_ROW_TOKENS) -> bool:
    """True when some prompt repeats and every packed row has at most ``max_row_tokens``."""
    return groups.count < groups.group.shape[0] and groups.longest_row <= max_row_tokens


def layout_problem(batch: SequenceBatch) -> str | None:
    """Why prefix sharing cannot reproduce the padded path on ``batch``, or None.

    It needs a text-only batch whose rows attend one contiguous run of tokens holding a
    non-empty prompt (the last prompt column predicts the first response token).
    """
    if batch.multimodal:
        return "the batch has multimodal inputs"
    p = batch.input_ids.shape[1] - batch.response_length
    if p < 1:
        return "the batch has no prompt column"
    attn = batch.attention_mask.bool()
    runs = attn[:, 0].long() + (attn[:, 1:] & ~attn[:, :-1]).sum(-1)  # [B] attended runs
    if bool((runs > 1).any()):
        return f"the attention mask of row {int((runs > 1).nonzero()[0])} has holes"
    if not bool(attn[:, p - 1].all()):
        return f"row {int((~attn[:, p - 1]).nonzero()[0])} has an empty prompt"
    return None


@dataclass(frozen=True)
class PrefixPlan:
    """Inputs of the prefix-shared forward.

    ``input_ids``, ``position_ids``, ``segment_ids`` (U, N): packed rows (pad id 0), their
    positions, and what each token is (0 prompt, b + 1 response of sample b, -1 padding);
    ``head_rows``, ``head_cols`` (K,): the packed token that predicts each scored token;
    ``labels`` (K,): the scored tokens, in row-major order of ``scored`` (B, R);
    ``group_ids`` (U, N), optional: which prompt group each token belongs to when a row holds
    several (:mod:`~lightrft.adapters.hf.packed_prefix`; -1 padding); None: one per row.
    """

    input_ids: Tensor
    position_ids: Tensor
    segment_ids: Tensor
    head_rows: Tensor
    head_cols: Tensor
    labels: Tensor
    scored: Tensor
    group_ids: Tensor | None = None

    def attention_mask(self, dtype: torch.dtype | None = None) -> Tensor:
        """Shape (U, 1, N, N): True (boolean) or 0 (additive ``dtype``) where a query may
        attend a key; the additive form holds ``finfo(dtype).min`` elsewhere."""
        seg = self.segment_ids
        n, device = seg.shape[1], seg.device
        query, key = seg[:, :, None], seg[:, None, :]  # [U, N, 1], [U, 1, N]
        causal = torch.ones(n, n, dtype=torch.bool, device=device).tril()
        allowed = causal & (query != _PADDING) & ((key == _PROMPT) | (key == query))
        if self.group_ids is not None:  # several prompt groups per row: stay in your own
            allowed &= self.group_ids[:, :, None] == self.group_ids[:, None, :]
        allowed |= torch.eye(n, dtype=torch.bool, device=device)  # padding: itself only
        allowed = allowed[:, None]  # [U, 1, N, N]
        if dtype is None:
            return allowed
        additive = torch.zeros(allowed.shape, dtype=dtype, device=device)
        return additive.masked_fill_(~allowed, torch.finfo(dtype).min)


def plan_prefix_sharing(batch: SequenceBatch, groups: PromptGroups | None = None) -> PrefixPlan:
    """Packed rows, positions, segments and LM-head gather indices for ``batch``.

    Raises ``ValueError`` when :func:`layout_problem` finds one.
    """
    problem = layout_problem(batch)
    if problem is not None:
        raise ValueError(f"prefix sharing cannot run this batch: {problem}")
    g = groups if groups is not None else group_prompts(batch)
    ids, attn = batch.input_ids, batch.attention_mask.bool()
    b, r = ids.shape[0], batch.response_length
    p = ids.shape[1] - r
    u, n, device = g.count, g.longest_row, ids.device
    response_start = _response_starts(g)  # [B]
    packed = ids.new_zeros((u, n))
    positions = ids.new_zeros((u, n))
    segments = ids.new_full((u, n), _PADDING)
    # prompt tokens, from the first sample of each group
    prompt_attn = attn[g.first_rows, :p]  # [U, P]
    index = prompt_attn.long().cumsum(-1) - 1  # [U, P] index in the prompt = position
    row = torch.arange(u, device=device)[:, None].expand(u, p)
    at = (row[prompt_attn], index[prompt_attn])
    packed[at] = ids[g.first_rows, :p][prompt_attn]
    positions[at] = index[prompt_attn]
    segments[at] = _PROMPT
    # response tokens of every sample
    response_attn = attn[:, p:]  # [B, R]
    index = response_attn.long().cumsum(-1) - 1  # [B, R] index in the response
    column = response_start[:, None] + index  # [B, R]
    row = g.group[:, None].expand(b, r)
    at = (row[response_attn], column[response_attn])
    packed[at] = ids[:, p:][response_attn]
    positions[at] = (g.prompt_lengths[:, None] + index)[response_attn]
    segments[at] = (torch.arange(b, device=device)[:, None] + 1).expand(b, r)[response_attn]
    # a response's first token is predicted by the last prompt token, the others by the
    # previous response token
    scored = batch.response_mask.bool() & response_attn
    predictor = torch.where(index == 0, g.prompt_lengths[:, None] - 1, column - 1)  # [B, R]
    return PrefixPlan(
        input_ids=packed,
        position_ids=positions,
        segment_ids=segments,
        head_rows=row[scored],
        head_cols=predictor[scored],
        labels=ids[:, p:][scored],
        scored=scored,
    )


def _response_starts(groups: PromptGroups) -> Tensor:
    """The packed column (B,) of each sample's first response token: after its prompt and
    the responses of the earlier samples of its group."""
    order = torch.argsort(groups.group, stable=True)  # [B] samples, group after group
    lengths = groups.response_lengths[order]
    before = torch.cumsum(lengths, 0) - lengths  # [B] response tokens before, in `order`
    sorted_group = groups.group[order]
    first = torch.searchsorted(sorted_group, torch.arange(groups.count, device=order.device))
    starts = torch.empty_like(before)
    starts[order] = groups.prompt_lengths[order] + before - before[first][sorted_group]
    return starts
