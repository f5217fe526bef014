"""Prefix sharing: each distinct prompt of a batch runs through the causal LM once.

Shape letters: B samples, T = P + R columns (left-padded prompt, right-padded response,
see :mod:`lightrft.domain.types`), R response columns, U distinct prompts (= packed rows),
N tokens per packed row, K scored response tokens, H hidden size, V vocabulary.

In GRPO each prompt has G sampled responses and the padded forward runs the prompt G times.
Here the rows whose unpadded prompts are equal become one packed row
``[prompt, response_1, ..., response_k]``, padded at the end to the longest packed row N.
A boolean mask (U, 1, N, N) lets a prompt token attend causally within the prompt, a response
token attend to the whole prompt and to the earlier tokens of its own response, and a padding
token attend to itself only (a query row with no key at all gives NaN). Position ids of a
response continue from the prompt length, as in its unpadded sequence.

Why the results equal the padded path: in a causal decoder the hidden state of a token is a
function of the tokens it attends to and their position ids only (RoPE scores depend on
position differences; masked keys get softmax weight exactly 0). Each response token attends
to exactly the tokens before it in its own unpadded sequence, at the same positions, so its
hidden state, logits, log-prob and entropy are the same functions of the parameters, and so
are their gradients (a prompt token's hidden state feeds every response of its group: its
gradient is the sum of what the G copies of the padded path receive). Only the order of
floating-point sums differs.

The model runs through its own ``forward``, so wrappers keep their hooks (calling the decoder
directly would skip FSDP2's gather of the root group's weights and DeepSpeed's engine
forward), and a forward pre-hook on the output embeddings (the LM head) replaces
its input (U, N, H) by the K hidden states that predict a scored token: only those go
through the head, giving logits (1, K, V) for the domain's chunked ``token_logprobs``.

Needs an attention kernel that takes a dense 4-D mask (``sdpa``: boolean; ``eager``: additive
float); ``flash_attention_2`` takes none. The mask holds U * N * N booleans (N = 4096: 16 MiB
per distinct prompt; four bytes per entry for eager in float32).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from torch import Tensor, nn

from lightrft.adapters.hf.fused_head import (
    FusedHeadMode,
    fused_head_logprobs,
    unwrap_peft,
    use_fused_head,
)
from lightrft.adapters.hf.logprobs import response_logprobs
from lightrft.adapters.hf.packed_prefix import pack_prefix_plan
from lightrft.adapters.hf.prefix_plan import (
    DEFAULT_MAX_ROW_TOKENS,
    PrefixPlan,
    PromptGroups,
    group_prompts,
    layout_problem,
    plan_prefix_sharing,
    worth_sharing,
)
from lightrft.domain.ports import PolicyOutput
from lightrft.domain.token_logprobs import token_logprobs
from lightrft.domain.types import SequenceBatch

__all__ = [
    "DEFAULT_MAX_ROW_TOKENS",
    "DENSE_MASK_ATTENTION",
    "PrefixPlan",
    "PrefixSharing",
    "PrefixSharingMode",
    "PromptGroups",
    "group_prompts",
    "layout_problem",
    "plan_prefix_sharing",
    "prefix_shared_logprobs",
    "worth_sharing",
]

PrefixSharingMode = Literal["auto", "on", "off"]
DENSE_MASK_ATTENTION = ("sdpa", "eager")
"""Attention implementations that accept a 4-D mask."""


def prefix_shared_logprobs(
    model: nn.Module,
    batch: SequenceBatch,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    chunk_size: int = 1024,
    plan: PrefixPlan | None = None,
    fused_head: FusedHeadMode = "auto",
) -> PolicyOutput:
    """Log-probs (B, R) of the response tokens of ``batch`` (0 on padding), each distinct
    prompt run once; ``entropy`` (B, R) when ``with_entropy``.

    Equal to ``response_logprobs`` up to float rounding (module docstring). ``plan``
    reuses a :func:`plan_prefix_sharing` result. ``fused_head``: the LM head runs fused
    with the log-softmax where the model allows it (:mod:`~lightrft.adapters.hf.fused_head`).
    Autograd follows the caller's grad mode.
    """
    attention = attention_implementation(model)
    if attention not in DENSE_MASK_ATTENTION:
        raise ValueError(
            f"prefix sharing needs an attention implementation that takes a dense 4-D mask "
            f"{DENSE_MASK_ATTENTION}; the model uses {attention!r}"
        )
    plan = plan if plan is not None else plan_prefix_sharing(batch)
    base: Any = unwrap_peft(model)
    dtype = None if attention == "sdpa" else base.get_input_embeddings().weight.dtype
    inputs = {
        "input_ids": plan.input_ids,
        "attention_mask": plan.attention_mask(dtype),
        "position_ids": plan.position_ids,
    }
    if use_fused_head(fused_head, model, inputs, plan.labels.numel()):
        out = fused_head_logprobs(
            model,
            inputs,
            lambda hidden: hidden[plan.head_rows, plan.head_cols],  # [K, H]
            plan.labels,
            temperature=temperature,
            with_entropy=with_entropy,
            chunk_size=chunk_size,
        )
        return PolicyOutput(
            _scatter(out.logprobs, plan.scored),
            None if out.entropy is None else _scatter(out.entropy, plan.scored),
        )
    logits = head_logits(model, plan, **inputs, use_cache=False)
    out = token_logprobs(
        logits,
        plan.labels[None],
        temperature=temperature,
        with_entropy=with_entropy,
        chunk_size=chunk_size,
    )
    return PolicyOutput(
        _scatter(out.logprobs[0], plan.scored),
        None if out.entropy is None else _scatter(out.entropy[0], plan.scored),
    )


@dataclass(frozen=True)
class PrefixSharing:
    """The ``prefix_sharing`` option of ``HfPolicy`` and ``HfReferenceModel``.

    ``"auto"``: share when the attention takes a dense mask, some prompt repeats and no
    packed row exceeds ``max_row_tokens``; ``"on"``: share every batch (refuses models whose
    attention takes no dense mask); ``"off"``: never.
    """

    mode: PrefixSharingMode = "auto"
    max_row_tokens: int = DEFAULT_MAX_ROW_TOKENS

    def __post_init__(self) -> None:
        if self.mode not in get_args(PrefixSharingMode):
            raise ValueError(
                f"prefix_sharing must be one of {get_args(PrefixSharingMode)}, got {self.mode!r}"
            )
        if self.max_row_tokens < 1:
            raise ValueError(f"max_row_tokens must be >= 1, got {self.max_row_tokens}")

    def check_model(self, model: nn.Module) -> None:
        """Raises ``ValueError`` if the mode is "on" and the model's attention cannot share."""
        attention = attention_implementation(model)
        if self.mode == "on" and attention not in DENSE_MASK_ATTENTION:
            raise ValueError(
                f"prefix_sharing='on' needs an attention implementation that takes a dense "
                f"4-D mask {DENSE_MASK_ATTENTION}, but the model uses {attention!r} "
                "(flash_attention_2 takes none); use prefix_sharing='auto' or 'off'"
            )

    def plan(self, model: nn.Module, batch: SequenceBatch) -> PrefixPlan | None:
        """The plan to run ``batch`` with prefix sharing, or None for the ordinary path.

        Under "on", a batch that cannot be shared exactly raises ``ValueError``.
        """
        if self.mode == "off":
            return None
        on = self.mode == "on"
        if not on and attention_implementation(model) not in DENSE_MASK_ATTENTION:
            return None
        problem = layout_problem(batch)
        if problem is not None:
            if on:
                raise ValueError(f"prefix_sharing='on' cannot run this batch: {problem}")
            return None
        groups = group_prompts(batch)
        window = _sliding_window(model)
        if window is not None and groups.longest_row > window:
            if on:
                raise ValueError(
                    f"prefix_sharing='on': a packed row of {groups.longest_row} tokens exceeds "
                    f"the model's sliding window ({window}), which a dense mask does not apply"
                )
            return None
        if not on and not worth_sharing(groups, self.max_row_tokens):
            return None
        return plan_prefix_sharing(batch, groups)

    def logprobs(
        self,
        model: nn.Module,
        batch: SequenceBatch,
        *,
        temperature: float,
        with_entropy: bool,
        packing: bool,
        chunk_size: int,
        fused_head: FusedHeadMode = "auto",
    ) -> PolicyOutput:
        """Response log-probs (B, R) of ``batch``: prefix-shared when :meth:`plan` gives a
        plan (with ``packing``, several prompt groups per row of at most ``max_row_tokens``,
        :mod:`~lightrft.adapters.hf.packed_prefix`), else ``response_logprobs`` (padded, or
        packed when ``packing``)."""
        plan = self.plan(model, batch)
        if plan is not None and packing:
            plan = pack_prefix_plan(plan, self.max_row_tokens)
        if plan is not None:
            return prefix_shared_logprobs(
                model,
                batch,
                temperature=temperature,
                with_entropy=with_entropy,
                chunk_size=chunk_size,
                plan=plan,
                fused_head=fused_head,
            )
        return response_logprobs(
            model,
            batch,
            temperature=temperature,
            with_entropy=with_entropy,
            packing=packing,
            chunk_size=chunk_size,
            fused_head=fused_head,
        )


def attention_implementation(model: nn.Module) -> str:
    """``config._attn_implementation`` of the (unwrapped) model, e.g. "sdpa"."""
    config = getattr(unwrap_peft(model), "config", None)
    return str(getattr(config, "_attn_implementation", None))


def _sliding_window(model: nn.Module) -> int | None:
    """The model's attention window when it uses one (a dense mask ignores it)."""
    config = getattr(unwrap_peft(model), "config", None)
    window = getattr(config, "sliding_window", None)
    if not window or getattr(config, "use_sliding_window", True) is False:
        return None
    return int(window)


def head_logits(model: nn.Module, plan: PrefixPlan, **inputs: Any) -> Tensor:
    """Logits (1, K, V): the model's forward, with the LM head fed only the K hidden states
    at ``plan.head_rows, plan.head_cols`` instead of all (U, N, H)."""
    base: Any = unwrap_peft(model)
    head = base.get_output_embeddings()
    if not isinstance(head, nn.Module):
        raise ValueError("prefix sharing needs a model with output embeddings (an LM head)")
    calls = 0

    def gather(module: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
        nonlocal calls
        calls += 1
        hidden = args[0]  # [U, N, H]
        if tuple(hidden.shape[:2]) != tuple(plan.input_ids.shape):
            raise RuntimeError(
                f"the LM head got hidden states of shape {tuple(hidden.shape)}, expected "
                f"{tuple(plan.input_ids.shape)} + (H,): this model's forward slices them"
            )
        return (hidden[plan.head_rows, plan.head_cols][None], *args[1:])  # [1, K, H]

    handle = head.register_forward_pre_hook(gather)
    try:
        logits: Tensor = model(**inputs).logits
    finally:
        handle.remove()
    if calls != 1:
        raise RuntimeError(f"the LM head ran {calls} times in one forward; expected once")
    return logits


def _scatter(values: Tensor, where: Tensor) -> Tensor:
    """Places ``values`` (K,) at the True entries of ``where`` (B, R); zeros elsewhere."""
    return values.new_zeros(where.shape).masked_scatter(where, values)
