"""The LM head fused with the log-softmax: response log-probs without the (K, V) logits.

Shape letters: B samples, T tokens, K scored tokens, H hidden size, V vocabulary.

A ``*ForCausalLM`` of the families in :data:`FUSED_HEAD_MODEL_TYPES` computes
``lm_head(decoder(inputs).last_hidden_state)``. Instead of its forward, the fused path
runs the decoder (``model.base_model``; LoRA layers of a PEFT wrapper stay active), takes
the hidden states of the K positions that predict a scored token and hands them with the
head's weight and bias to :func:`~lightrft.domain.linear_logprobs.linear_token_logprobs`,
which never holds the logits (K, V) or their gradient whole. Values equal the unfused
path up to float rounding of the matmul order.

:func:`fused_head_problem` says why a model or its inputs cannot take this path (the
callers then run the model's own forward): a family outside the allowlist (a forward that
does more than decoder -> head, e.g. logit soft-capping), a head that is not a plain
``nn.Linear`` (a LoRA-wrapped head), a sharded head weight (FSDP2's DTensor, DeepSpeed
ZeRO-3's partitioned parameter: their forward hooks live on the wrapped model's forward),
a logit scaling in the config, inputs other than text ids, mask and positions, or forward
hooks on the model or its head (a wrapper's or a test's: the fused path would skip them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from torch import Tensor, nn
from torch.distributed.tensor import DTensor

from lightrft.domain.linear_logprobs import linear_token_logprobs
from lightrft.domain.token_logprobs import TokenLogprobs

FUSED_HEAD_MODEL_TYPES = frozenset({"gemma", "llama", "mistral", "qwen2", "qwen3"})
"""``config.model_type`` of the text causal LMs whose forward is decoder -> lm_head
(verified against the unfused path in tests/unit/adapters/hf/test_fused_head.py)."""

TEXT_INPUTS = frozenset({"input_ids", "attention_mask", "position_ids"})
"""The forward arguments the fused path passes to the decoder; any other (media) input
keeps the model's own forward."""

_LOGIT_SCALINGS = ("final_logit_softcapping", "logit_scale", "logits_scaling")

FusedHeadMode = Literal["auto", "on", "off"]
"""``model.fused_lm_head``: on: wherever :func:`fused_head_problem` allows; off: never;
auto: there, and only when the logits the unfused path would hold are at least
:data:`AUTO_MIN_LOGITS_BYTES` (long responses), so short-response runs keep the unfused
path and their figures to the digit."""

AUTO_MIN_LOGITS_BYTES = 256 * 2**20
"""auto's threshold: float32 logits of this many bytes (1365 scored rows of a 49152-token
vocabulary); below it the logits and their gradient cost little next to the model."""


def use_fused_head(
    mode: FusedHeadMode, model: nn.Module, inputs: Mapping[str, Any], logit_rows: int
) -> bool:
    """Whether a forward of ``model`` on ``inputs`` takes the fused path under ``mode``;
    ``logit_rows``: the rows of logits the unfused path would compute."""
    if mode == "off" or fused_head_problem(model, inputs) is not None:
        return False
    if mode == "on":
        return True
    head = _head(unwrap_peft(model))
    vocab = 0 if head is None else head.out_features
    return logit_rows * vocab * 4 >= AUTO_MIN_LOGITS_BYTES


def fused_head_problem(model: nn.Module, inputs: Mapping[str, Any]) -> str | None:
    """Why ``model`` with forward arguments ``inputs`` cannot take the fused path, or None."""
    base = unwrap_peft(model)
    config = getattr(base, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type not in FUSED_HEAD_MODEL_TYPES:
        return f"model_type {model_type!r} is not one of {sorted(FUSED_HEAD_MODEL_TYPES)}"
    if not type(base).__name__.endswith("ForCausalLM"):
        return f"{type(base).__name__} is not a *ForCausalLM"
    other = sorted(set(inputs) - TEXT_INPUTS)
    if other:
        return f"the inputs carry {other} besides {sorted(TEXT_INPUTS)}"
    for name in _LOGIT_SCALINGS:
        value = getattr(config, name, None)
        if value is not None and value != 1:
            return f"config.{name} is {value!r} (the head's output is rescaled)"
    head = _head(base)
    if head is None:
        return "the output embedding is not a plain nn.Linear"
    if isinstance(head.weight, DTensor) or hasattr(head.weight, "ds_id"):
        return "the head's weight is sharded (FSDP2 DTensor or DeepSpeed ZeRO-3 parameter)"
    if _decoder(base) is None:
        return "the model has no separate decoder (base_model)"
    for what, module in (("model", model), ("unwrapped model", base), ("LM head", head)):
        if module._forward_hooks or module._forward_pre_hooks:
            return f"the {what} has forward hooks, which the fused path would not run"
    return None


def fused_head_logprobs(
    model: nn.Module,
    inputs: Mapping[str, Any],
    select: Callable[[Tensor], Tensor],
    labels: Tensor,
    *,
    temperature: float,
    with_entropy: bool,
    chunk_size: int,
) -> TokenLogprobs:
    """(K,) log-probs (and entropies) of ``labels`` (K,) from the decoder's hidden states.

    ``select`` picks the K predicting positions from the last hidden state (B, T, H) as
    (K, H). Call only when :func:`fused_head_problem` returned None.
    """
    base = unwrap_peft(model)
    decoder, head = _decoder(base), _head(base)
    if decoder is None or head is None:
        raise ValueError(f"the fused LM head cannot run on this model: {type(base).__name__}")
    hidden: Tensor = decoder(**inputs, use_cache=False).last_hidden_state  # [B, T, H]
    return linear_token_logprobs(
        select(hidden),
        head.weight,
        head.bias,
        labels,
        temperature=temperature,
        with_entropy=with_entropy,
        chunk_size=chunk_size,
    )


def unwrap_peft(model: nn.Module) -> nn.Module:
    """The ``transformers`` model inside a PEFT wrapper (LoRA layers stay active), else
    ``model``."""
    unwrap: Any = getattr(model, "get_base_model", None)
    base: nn.Module = unwrap() if callable(unwrap) else model
    return base


def _head(base: nn.Module) -> nn.Linear | None:
    get = getattr(base, "get_output_embeddings", None)
    head = get() if callable(get) else None
    return head if type(head) is nn.Linear else None


def _decoder(base: nn.Module) -> nn.Module | None:
    decoder = getattr(base, "base_model", None)
    return decoder if isinstance(decoder, nn.Module) and decoder is not base else None
