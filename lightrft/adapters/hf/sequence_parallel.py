"""Ulysses sequence parallelism: one long forward split over S ranks along the sequence.

Shape letters: B samples, R response columns, M tokens of the packed row (padded to a
multiple of S), L = M / S tokens per rank, H attention heads, D head size, V vocabulary,
K scored response tokens (K_r of them predicted on rank r).

Every rank of a sequence-parallel group holds the same batch. The batch becomes one packed
row (:func:`~lightrft.adapters.hf.prefix_plan.plan_prefix_sharing` then
:func:`~lightrft.adapters.hf.packed_prefix.pack_prefix_plan`: distinct prompts once, every
group in one row, positions restarting per group) and rank r runs the columns
``[r L, (r + 1) L)``. Everything in a decoder layer is per token except attention; there
(:func:`ulysses_attention`) queries, keys and values (B, H, L, D) are exchanged with one
``all_to_all_single`` so that each rank holds H / S heads of all M tokens, attention runs
with the full (M, M) mask, and a second all-to-all brings the output back to (B, L, H, D).
Each rank puts through the LM head only its own hidden states that predict a scored token,
and the K_r log-probs are all-gathered into the (B, R) result on every rank.

Gradients: every rank computes the same loss from the gathered log-probs; the gather's
backward keeps each rank's own slice, and the all-to-all's backward is the reverse
all-to-all, so the sum over the group of each rank's parameter gradients is the gradient of
the one-rank forward. A strategy that averages gradients over all its ranks must multiply
the loss by S (``Fsdp2Strategy(sequence_parallel_size=S)`` does).

Needs S to divide H (queries; keys and values are repeated to H heads before the exchange)
and sdpa or eager attention; flash-attention varlen under SP is not implemented.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.nn import functional as F  # noqa: N812
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import repeat_kv

from lightrft.adapters.hf.packed_prefix import pack_prefix_plan
from lightrft.adapters.hf.policy import HfPolicy
from lightrft.adapters.hf.prefix_plan import PrefixPlan, plan_prefix_sharing
from lightrft.adapters.hf.prefix_sharing import head_logits, unwrap_peft
from lightrft.domain.ports import NamedTensors, PolicyOutput
from lightrft.domain.token_logprobs import token_logprobs
from lightrft.domain.types import SequenceBatch

ATTENTION_NAME = "lightrft_ulysses"


@dataclass(frozen=True)
class SequenceParallelGroup:
    """This rank's sequence-parallel group: ``size`` ranks sharing one batch."""

    group: dist.ProcessGroup | None
    size: int
    rank: int


def sequence_parallel_groups(size: int) -> tuple[SequenceParallelGroup, dist.ProcessGroup | None]:
    """Splits the default group into blocks of ``size`` consecutive ranks (one sequence-
    parallel group each) and returns this rank's block and its data-parallel group (the
    ranks with the same position in every block; collective: every rank calls it)."""
    world, rank = dist.get_world_size(), dist.get_rank()
    if size < 1 or world % size:
        raise ValueError(f"sequence_parallel_size must divide the world size {world}, got {size}")
    mine: dist.ProcessGroup | None = None
    for start in range(0, world, size):
        group = dist.new_group(list(range(start, start + size)))
        if start <= rank < start + size:
            mine = group
    data: dist.ProcessGroup | None = None
    for offset in range(size):
        group = dist.new_group(list(range(offset, world, size)))
        if rank % size == offset:
            data = group
    return SequenceParallelGroup(mine, size, rank % size), data


class _AllToAll(torch.autograd.Function):
    """``all_to_all_single`` of equal chunks along dim 0; its gradient is the same exchange."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, group: dist.ProcessGroup | None) -> Tensor:
        ctx.group = group
        x = x.contiguous()
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
        dist.all_to_all_single(out, x, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        grad = grad.contiguous()
        out = torch.empty_like(grad, memory_format=torch.contiguous_format)
        dist.all_to_all_single(out, grad, group=ctx.group)
        return out, None


def _all_to_all(x: Tensor, group: dist.ProcessGroup | None) -> Tensor:
    """Autograd-aware :class:`_AllToAll`."""
    out: Tensor = _AllToAll.apply(x, group)  # type: ignore[no-untyped-call]
    return out


def _sequence_to_heads(x: Tensor, sp: SequenceParallelGroup) -> Tensor:
    """(B, H, L, D) local tokens, all heads -> (B, H / S, M, D) all tokens, local heads."""
    b, h, length, d = x.shape
    s = sp.size
    chunks = x.permute(1, 0, 2, 3).reshape(s, h // s, b, length, d)  # chunk j -> rank j
    got = _all_to_all(chunks, sp.group)  # [S (source rank), H/S, B, L, D]
    return got.permute(2, 1, 0, 3, 4).reshape(b, h // s, s * length, d)


def _heads_to_sequence(x: Tensor, sp: SequenceParallelGroup) -> Tensor:
    """(B, H / S, M, D) -> (B, L, H, D): local tokens of every head (HF's output layout)."""
    b, hs, m, d = x.shape
    s, length = sp.size, m // sp.size
    chunks = x.reshape(b, hs, s, length, d).permute(2, 1, 0, 3, 4)  # tokens of rank j
    got = _all_to_all(chunks, sp.group)  # [S (head group), H/S, B, L, D]
    return got.permute(2, 3, 0, 1, 4).reshape(b, length, s * hs, d)


@dataclass(frozen=True)
class _Context:
    sp: SequenceParallelGroup
    mask: Tensor  # [1, 1, M, M] bool


_ACTIVE: ContextVar[_Context | None] = ContextVar("lightrft_ulysses", default=None)


def ulysses_attention(
    module: nn.Module,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attention_mask: Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[Tensor, None]:
    """HF attention function: query (B, H, L, D), key/value (B, H_kv, L, D) of this rank's
    tokens -> output (B, L, H, D). Attends over all M tokens with the active full mask."""
    ctx = _ACTIVE.get()
    if ctx is None:
        raise RuntimeError(
            f"attention {ATTENTION_NAME!r} runs only inside sequence_parallel_logprobs"
        )
    heads = query.shape[1]
    if heads % ctx.sp.size:
        raise ValueError(f"{heads} attention heads cannot be split over {ctx.sp.size} ranks")
    groups = heads // key.shape[1]
    key, value = repeat_kv(key, groups), repeat_kv(value, groups)
    q, k, v = (_sequence_to_heads(t, ctx.sp) for t in (query, key, value))
    out = F.scaled_dot_product_attention(
        q, k, v, attn_mask=ctx.mask, dropout_p=dropout if module.training else 0.0, scale=scaling
    )  # [B, H/S, M, D]
    return _heads_to_sequence(out, ctx.sp), None


AttentionInterface.register(ATTENTION_NAME, ulysses_attention)


class _GatherTokens(torch.autograd.Function):
    """Per-token values (K_r,) of every rank -> (K,) on every rank; backward keeps the own
    slice (each rank then holds the gradient of the same loss w.r.t. its own tokens)."""

    @staticmethod
    def forward(ctx: Any, local: Tensor, owner: Tensor, sp: SequenceParallelGroup) -> Tensor:
        ctx.mine = owner == sp.rank
        width = int(torch.bincount(owner, minlength=sp.size).max()) if len(owner) else 0
        padded = local.new_zeros(width)
        padded[: local.shape[0]] = local
        parts = [torch.empty_like(padded) for _ in range(sp.size)]
        dist.all_gather(parts, padded, group=sp.group)
        full = local.new_zeros(owner.shape[0])
        for r, part in enumerate(parts):
            where = owner == r
            full[where] = part[: int(where.sum())]
        return full

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None, None]:
        return grad[ctx.mine], None, None


def _gather_tokens(local: Tensor, owner: Tensor, sp: SequenceParallelGroup) -> Tensor:
    """Autograd-aware :class:`_GatherTokens`: (K_r,) -> (K,)."""
    out: Tensor = _GatherTokens.apply(local, owner, sp)  # type: ignore[no-untyped-call]
    return out


def _padded_to_multiple(plan: PrefixPlan, size: int) -> PrefixPlan:
    """``plan`` (one row) padded at the end to a multiple of ``size`` columns."""
    m = plan.input_ids.shape[1]
    extra = (-m) % size
    if extra == 0:
        return plan
    group_ids = plan.group_ids
    assert group_ids is not None

    def pad(t: Tensor, value: int) -> Tensor:
        return F.pad(t, (0, extra), value=value)

    return replace(
        plan,
        input_ids=pad(plan.input_ids, 0),
        position_ids=pad(plan.position_ids, 0),
        segment_ids=pad(plan.segment_ids, -1),
        group_ids=pad(group_ids, -1),
    )


@contextmanager
def _attention(model: nn.Module, ctx: _Context) -> Iterator[None]:
    """Runs ``model`` with :func:`ulysses_attention` and ``ctx`` active."""
    config: Any = getattr(unwrap_peft(model), "config")  # noqa: B009
    before = config._attn_implementation
    token = _ACTIVE.set(ctx)
    config._attn_implementation = ATTENTION_NAME
    try:
        yield
    finally:
        config._attn_implementation = before
        _ACTIVE.reset(token)


def sequence_parallel_logprobs(
    model: nn.Module,
    batch: SequenceBatch,
    sp: SequenceParallelGroup,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    chunk_size: int = 1024,
) -> PolicyOutput:
    """Log-probs (B, R) of the response tokens of ``batch`` (0 on padding), computed with
    the sequence split over ``sp``; every rank of ``sp`` passes the same batch and gets the
    same result. ``entropy`` (B, R) when ``with_entropy``. Collective within ``sp``."""
    plan = plan_prefix_sharing(batch)
    one_row = max(1, int((plan.segment_ids != -1).sum()))
    plan = _padded_to_multiple(pack_prefix_plan(plan, one_row), sp.size)  # [1, M]
    m = plan.input_ids.shape[1]
    length = m // sp.size
    lo = sp.rank * length
    owner = torch.div(plan.head_cols, length, rounding_mode="floor")  # [K] rank of each
    mine = owner == sp.rank
    local = replace(
        plan,
        input_ids=plan.input_ids[:, lo : lo + length],
        head_rows=plan.head_rows[mine],
        head_cols=plan.head_cols[mine] - lo,
    )
    ctx = _Context(sp, plan.attention_mask())
    with _attention(model, ctx):
        logits = head_logits(
            model,
            local,
            input_ids=local.input_ids,
            attention_mask=ctx.mask,  # 4-D: passed through to the attention unchanged
            position_ids=plan.position_ids[:, lo : lo + length],
            use_cache=False,
        )
    out = token_logprobs(
        logits,
        plan.labels[mine][None],
        temperature=temperature,
        with_entropy=with_entropy,
        chunk_size=chunk_size,
    )
    logprobs = _gather_tokens(out.logprobs[0], owner, sp)
    result = logprobs.new_zeros(plan.scored.shape).masked_scatter(plan.scored, logprobs)
    entropy = None
    if out.entropy is not None:
        gathered = _gather_tokens(out.entropy[0], owner, sp)
        entropy = gathered.new_zeros(plan.scored.shape).masked_scatter(plan.scored, gathered)
    return PolicyOutput(result, entropy)


class SequenceParallelPolicy:
    """The ``Policy`` port over an :class:`~lightrft.adapters.hf.policy.HfPolicy` whose
    forwards run split over a sequence-parallel group (:func:`sequence_parallel_logprobs`).

    Every rank of ``sp`` must call :meth:`forward` with the same batch. Train it with a
    strategy that knows the group size (``Fsdp2Strategy(sequence_parallel_size=S)``).
    """

    def __init__(self, policy: HfPolicy, sp: SequenceParallelGroup, *, chunk_size: int = 1024):
        self._policy, self._sp, self._chunk_size = policy, sp, chunk_size

    @property
    def module(self) -> nn.Module:
        """The wrapped policy's module."""
        return self._policy.module

    @property
    def uses_lora(self) -> bool:
        """As :attr:`HfPolicy.uses_lora`."""
        return self._policy.uses_lora

    def forward(
        self, batch: SequenceBatch, *, temperature: float = 1.0, with_entropy: bool = False
    ) -> PolicyOutput:
        """Log-probs (B, R) of the response tokens (0 on padding), entropy (B, R) if asked."""
        return sequence_parallel_logprobs(
            self._policy.module,
            batch,
            self._sp,
            temperature=temperature,
            with_entropy=with_entropy,
            chunk_size=self._chunk_size,
        )

    def weights_for_sync(self, full_state: NamedTensors) -> Iterator[tuple[str, Tensor]]:
        """As :meth:`HfPolicy.weights_for_sync`."""
        return self._policy.weights_for_sync(full_state)

    def export_hf(
        self, directory: str | Path, *, state: Mapping[str, Tensor] | None = None
    ) -> Path:
        """As :meth:`HfPolicy.export_hf`."""
        return self._policy.export_hf(directory, state=state)

    def export_adapter(
        self, directory: str | Path, *, state: Mapping[str, Tensor] | None = None
    ) -> Path | None:
        """As :meth:`HfPolicy.export_adapter`."""
        return self._policy.export_adapter(directory, state=state)
