"""Packing prefix-shared rows: several prompt groups in one row, attention confined to each.

Shape letters as in :mod:`lightrft.adapters.hf.prefix_plan`: U prompt groups (rows of the
plan), N their padded length, V packed rows, M their padded length, K scored tokens.

A :class:`~lightrft.adapters.hf.prefix_plan.PrefixPlan` holds one row per distinct prompt,
``[prompt, response_1, ..., response_k]``, all padded to the longest (N). With uneven
groups most of the (U, N) grid is padding. :func:`pack_prefix_plan` concatenates the groups
into V rows of at most ``row_tokens`` tokens each (the balanced partition of
:mod:`lightrft.domain.token_budget`, so the packed rows are about equally long). Position
ids restart with each group (they are copied from the plan), and ``group_ids`` confines
attention: a query attends a key only of its own group, and there as in the plan (a prompt
token its prompt causally; a response token the prompt and its own earlier tokens). Each
scored token is therefore computed from exactly the tokens and positions it sees in the
padded path, so log-probs and gradients equal it up to float rounding.
"""

from __future__ import annotations

import torch

from lightrft.adapters.hf.prefix_plan import PrefixPlan
from lightrft.domain.token_budget import plan_token_budget

_PADDING = -1


def pack_prefix_plan(plan: PrefixPlan, row_tokens: int) -> PrefixPlan:
    """``plan`` with its groups concatenated into rows of at most ``row_tokens`` tokens
    (a group longer than that gets a row of its own). Returns a plan with ``group_ids``."""
    if plan.group_ids is not None:
        raise ValueError("this plan is packed already")
    valid = plan.segment_ids != _PADDING  # [U, N], tokens first, padding last
    lengths = valid.sum(-1)  # [U]
    layout = plan_token_budget([int(n) for n in lengths.tolist()], row_tokens)
    device = plan.input_ids.device
    u = lengths.shape[0]
    bin_of = torch.empty(u, dtype=torch.long)
    offset = torch.empty(u, dtype=torch.long)
    loads = []
    for v, groups in enumerate(layout.batches):
        start = 0
        for g in groups:
            bin_of[g], offset[g] = v, start
            start += int(lengths[g])
        loads.append(start)
    bin_of, offset = bin_of.to(device), offset.to(device)
    rows, cols = valid.nonzero(as_tuple=True)  # [T_all] every real token
    at = (bin_of[rows], offset[rows] + cols)
    shape = (len(layout.batches), max(loads))  # [V, M]
    ids = plan.input_ids.new_zeros(shape)
    positions = plan.position_ids.new_zeros(shape)
    segments = plan.segment_ids.new_full(shape, _PADDING)
    group_ids = plan.segment_ids.new_full(shape, _PADDING)
    ids[at] = plan.input_ids[rows, cols]
    positions[at] = plan.position_ids[rows, cols]
    segments[at] = plan.segment_ids[rows, cols]
    group_ids[at] = rows
    return PrefixPlan(
        input_ids=ids,
        position_ids=positions,
        segment_ids=segments,
        head_rows=bin_of[plan.head_rows],
        head_cols=offset[plan.head_rows] + plan.head_cols,
        labels=plan.labels,
        scored=plan.scored,
        group_ids=group_ids,
    )
