"""A one-token decode step of a Llama-family text model over its weights, without
``transformers``' module code.

Shape letters: N rows, L positions held (including the new one), E hidden size, H query
heads, K key/value heads (H = g x K), D head dim, I MLP width, V vocab.

On a small model on CPU a decode step through ``transformers``' modules spends about a
third of its time in Python: RMSNorm as six ops, ``rotate_half`` RoPE, a causal mask built
per step, output dataclasses, decorators and ``nn.Module.__call__`` for every submodule.
:class:`FusedDecoder` runs the same step as a flat list of tensor ops per layer:
``rms_norm``, one oneDNN-packed matmul for q|k|v, RoPE on q and k together (cos/sin from
the model's own ``rotary_emb``, once per step), the cache's ``update`` (the same call
``transformers``' attention makes, so a prefill run by ``transformers`` and these steps
share one cache, and ``reorder_cache`` keeps working), ``scaled_dot_product_attention``
reading grouped K/V heads in place under the padding mask, a packed o-projection, one
packed matmul for gate|up, ``silu(gate) * up``, a packed down-projection, and at the end the
final norm and a packed LM head.

Values equal the model's forward up to float rounding (the packed matmuls differ from MKL's
by about 1e-5 relative), so a seeded run samples the same tokens except after near-ties.
The packed copies cost about the float32 size of the linear weights (the LM head included)
in host memory; they are repacked when a source weight changed since it was packed
(in-place updates bump ``Tensor._version``; a reload replaces the storage), and
:meth:`FusedDecoder.release` drops them.

Supported: ``model_type`` in :data:`FUSED_FAMILIES` with their module layout, ``silu`` MLP,
full attention in every layer (no sliding window), no q/k norms, plain ``nn.Linear`` float32
weights on CPU; :func:`fused_decode_supported` says why a model is not.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import Tensor
from transformers import Cache

from lightrft.adapters.hf.packed_linear import PackedCache, PackedMatmul

# Families whose decoder layer is exactly: x + o(attn(rope(qkv(norm(x))))), then
# x + down(silu(gate(norm(x))) * up(norm(x))), with RMSNorm ``weight * normalized`` and
# unscaled embeddings (Gemma's 1 + weight norm or Granite's multipliers would not be).
FUSED_FAMILIES = frozenset({"llama", "qwen2", "mistral"})

FusedDecodeMode = Literal["auto", "on", "off"]
"""``HfRolloutEngine(fused_decode=...)``: on: the fused steps wherever
:func:`fused_decode_supported` and the engine's settings allow them, a warning naming why
elsewhere; auto: the same with the reason logged at info level; off: never."""

_ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")
_MLP = ("gate_proj", "up_proj", "down_proj")


def fused_decode_supported(model: torch.nn.Module, device: torch.device) -> str | None:
    """Why :class:`FusedDecoder` cannot run ``model`` on ``device``; ``None`` when it can."""
    if device.type != "cpu":
        return f"runs on CPU only (device {device})"
    if not torch.backends.mkldnn.is_available() or not hasattr(  # type: ignore[no-untyped-call]
        torch.ops.mkldnn, "_reorder_linear_weight"
    ):
        return "this PyTorch has no oneDNN weight packing"
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type not in FUSED_FAMILIES:
        return f"model_type {model_type!r} is not one of {sorted(FUSED_FAMILIES)}"
    if getattr(config, "hidden_act", None) != "silu":
        return f"hidden_act {getattr(config, 'hidden_act', None)!r} is not 'silu'"
    if getattr(config, "sliding_window", None) is not None:
        return f"sliding_window {config.sliding_window} is set (full attention only)"  # type: ignore[union-attr]
    kinds = set(getattr(config, "layer_types", None) or ["full_attention"])
    if kinds != {"full_attention"}:
        return f"layer_types {sorted(kinds)} are not all full_attention"
    inner = getattr(model, "model", None)
    for name in ("embed_tokens", "layers", "norm", "rotary_emb"):
        if not hasattr(inner, name):
            return f"model.model has no {name}"
    if not _is_rms_norm(inner.norm):  # type: ignore[union-attr]
        return "model.model.norm is not an RMSNorm with weight and variance_epsilon"
    if type(getattr(model, "lm_head", None)) is not torch.nn.Linear:
        return "model.lm_head is not a plain nn.Linear (quantized, wrapped or missing)"
    for index, layer in enumerate(inner.layers):  # type: ignore[union-attr]
        reason = _layer_unsupported(layer)
        if reason is not None:
            return f"layer {index}: {reason}"
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        if tensor.is_floating_point() and tensor.dtype != torch.float32:
            return f"{name} is {tensor.dtype}, not float32"
        if tensor.device.type != "cpu":
            return f"{name} is on {tensor.device}, not the CPU"
    return None


def _layer_unsupported(layer: torch.nn.Module) -> str | None:
    """Why one decoder layer is not the supported layout; ``None`` when it is."""
    attn, mlp = getattr(layer, "self_attn", None), getattr(layer, "mlp", None)
    if attn is None or mlp is None:
        return "no self_attn or mlp"
    for owner, names in ((attn, _ATTENTION), (mlp, _MLP)):
        for name in names:
            if type(getattr(owner, name, None)) is not torch.nn.Linear:
                return f"{name} is not a plain nn.Linear (quantized, LoRA-wrapped or missing)"
    for name in ("q_norm", "k_norm"):
        if hasattr(attn, name):
            return f"self_attn has {name} (per-head q/k norms are not fused)"
    for name in ("input_layernorm", "post_attention_layernorm"):
        if not _is_rms_norm(getattr(layer, name, None)):
            return f"{name} is not an RMSNorm with weight and variance_epsilon"
    return None


def _is_rms_norm(module: object) -> bool:
    """A ``LlamaRMSNorm``-like module: ``weight * x / rms(x)`` with ``variance_epsilon``."""
    return hasattr(module, "weight") and hasattr(module, "variance_epsilon")


@dataclass
class _Layer:
    """One decoder layer's modules, grouped as the fused step uses them."""

    index: int
    matmuls: tuple[tuple[str, tuple[torch.nn.Linear, ...]], ...]  # qkv, o, gate_up, down
    input_norm: torch.nn.Module
    post_norm: torch.nn.Module
    scaling: float


class FusedDecoder:
    """One-token decode steps of a supported model (see the module doc) on packed copies of
    its linear weights, packed at the first :meth:`active` and kept until :meth:`release`."""

    def __init__(self, model: torch.nn.Module) -> None:
        reason = fused_decode_supported(model, torch.device("cpu"))
        if reason is not None:
            raise ValueError(f"fused decode does not support this model: {reason}")
        outer: Any = model  # attributes checked by fused_decode_supported
        config, inner = outer.config, outer.model
        self._heads = int(config.num_attention_heads)
        self._kv_heads = int(config.num_key_value_heads)
        self._head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // self._heads)
        self._embed: torch.nn.Embedding = inner.embed_tokens
        self._rotary: torch.nn.Module = inner.rotary_emb
        self._norm: torch.nn.Module = inner.norm
        self._lm_head: torch.nn.Linear = outer.lm_head
        self._layers = [
            _layer(index, layer, self._head_dim)
            for index, layer in enumerate(inner.layers[: config.num_hidden_layers])
        ]
        self._check_shapes()
        self._packed = PackedCache()
        self._matmuls: list[tuple[PackedMatmul, ...]] = []
        self._head: PackedMatmul | None = None

    def _check_shapes(self) -> None:
        h, k, d = self._heads, self._kv_heads, self._head_dim
        for layer in self._layers:
            q, kp, v = layer.matmuls[0][1]
            if (q.out_features, kp.out_features, v.out_features) != (h * d, k * d, k * d):
                raise ValueError(
                    f"layer {layer.index}: q/k/v widths {q.out_features}/{kp.out_features}/"
                    f"{v.out_features} do not match {h}/{k} heads of {d}"
                )

    @contextmanager
    def active(self, rows: int) -> Iterator[None]:
        """Within the block :meth:`step` runs, on weights packed for about ``rows`` rows
        (any row count gives the same values); weights changed since they were packed are
        packed again on entry."""
        if rows < 1:
            raise ValueError(f"rows must be >= 1, got {rows}")
        matmuls = [
            tuple(
                self._packed.get((layer.index, name), group, rows) for name, group in layer.matmuls
            )
            for layer in self._layers
        ]
        self._head = self._packed.get((-1, "lm_head"), (self._lm_head,), rows)
        self._matmuls = matmuls
        try:
            yield
        finally:
            self._matmuls, self._head = [], None

    @property
    def packs(self) -> int:
        """Matmuls packed so far (a repack counts again)."""
        return self._packed.packs

    def release(self) -> None:
        """Drops the packed copies (the next :meth:`active` packs again)."""
        self._packed.clear()

    def step(self, input_ids: Tensor, mask: Tensor, positions: Tensor, cache: Cache) -> Tensor:
        """Logits (N, V) of the next token after ``input_ids`` (N, 1) at ``positions``
        (N, 1), attending to the L positions ``mask`` (N, L) marks (the new one included);
        writes the new keys and values into ``cache``. Only inside :meth:`active`."""
        if self._head is None:
            raise RuntimeError("FusedDecoder.step runs inside FusedDecoder.active() only")
        n, h, k, d = input_ids.shape[0], self._heads, self._kv_heads, self._head_dim
        hidden = F.embedding(input_ids[:, 0], self._embed.weight)  # [N, E]
        cos, sin = self._rotary(hidden, positions)  # [N, 1, D] each
        half = d // 2
        signed_sin = torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)  # rotate_half's signs
        attend = mask.bool()[:, None, None, :]  # [N, 1, 1, L]
        gqa = h != k
        for layer, (qkv_mm, o_mm, gate_up_mm, down_mm) in zip(
            self._layers, self._matmuls, strict=True
        ):
            x = _rms_norm(hidden, layer.input_norm)
            qkv = qkv_mm(x)  # [N, (H + 2K) D]
            qk = qkv[:, : (h + k) * d].view(n, h + k, d)
            qk = qk * cos + qk.roll(half, dims=-1) * signed_sin  # RoPE on q and k at once
            keys, values = cache.update(
                qk[:, h:, None, :], qkv[:, (h + k) * d :].view(n, k, 1, d), layer.index
            )  # [N, K, L, D] each
            attn = F.scaled_dot_product_attention(
                qk[:, :h, None, :],
                keys,
                values,
                attn_mask=attend,
                scale=layer.scaling,
                enable_gqa=gqa,
            )  # [N, H, 1, D]
            hidden = hidden + o_mm(attn.reshape(n, h * d))
            gate_up = gate_up_mm(_rms_norm(hidden, layer.post_norm))  # [N, 2I]
            gate, up = gate_up.chunk(2, dim=-1)
            hidden = hidden + down_mm(F.silu(gate) * up)
        logits: Tensor = self._head(_rms_norm(hidden, self._norm))
        return logits


def _layer(index: int, layer: Any, head_dim: int) -> _Layer:
    attn, mlp = layer.self_attn, layer.mlp
    return _Layer(
        index=index,
        matmuls=(
            ("qkv", (attn.q_proj, attn.k_proj, attn.v_proj)),
            ("o", (attn.o_proj,)),
            ("gate_up", (mlp.gate_proj, mlp.up_proj)),
            ("down", (mlp.down_proj,)),
        ),
        input_norm=layer.input_layernorm,
        post_norm=layer.post_attention_layernorm,
        scaling=float(getattr(attn, "scaling", None) or head_dim**-0.5),
    )


def _rms_norm(x: Tensor, norm: torch.nn.Module) -> Tensor:
    """``LlamaRMSNorm``'s float32 forward as one op: (..., E) -> (..., E)."""
    weight: Tensor = norm.weight  # type: ignore[assignment]
    return F.rms_norm(x, weight.shape, weight, norm.variance_epsilon)  # type: ignore[arg-type]
