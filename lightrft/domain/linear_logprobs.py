"""Per-token log-probs and entropy straight from hidden states and the LM head weight.

Shape letters: K rows (scored tokens), E hidden size, V vocabulary, C rows of one chunk
(C <= ``chunk_size``).

:func:`~lightrft.domain.token_logprobs.token_logprobs` chunks the log-softmax, but its
input, the logits (K, V), and their gradient still exist whole: 8 x 2048 rows of a
49k vocabulary are 3.2 GB each in float32. Here the LM head's matmul runs inside the
chunk loop as well (the fused linear cross-entropy of Liger-Kernel, arXiv:2410.10989,
applied to the per-token log-probs of PPO/GRPO): only a (C, V) slice of logits exists at
a time, backward saves the hidden states, the weight, the labels and two or three float32
numbers per row, recomputes each chunk's logits and softmax, and accumulates the
gradients of the hidden states, the weight and the bias chunk by chunk.

Values and gradients equal ``token_logprobs(hidden @ weight.T + bias, labels)`` up to
float rounding of the matmul: the logits of a chunk are computed in the dtype the LM head
would use (the inputs' dtype, or the autocast dtype), then upcast to float32 (float64 for
float64 inputs) exactly as ``token_logprobs`` upcasts them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable

from lightrft.domain.checks import check_shape
from lightrft.domain.token_logprobs import (
    TokenLogprobs,
    backward_chunk,
    check_chunking,
    check_labels,
    chunk_log_softmax,
    compute_dtype,
    forward_chunk,
    upstream_grads,
)


def linear_token_logprobs(
    hidden: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    labels: Tensor,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    chunk_size: int = 1024,
) -> TokenLogprobs:
    """Log-prob of each label and (optionally) the entropy of each token distribution,
    with logits z = (hidden @ weight.T + bias) / temperature never materialized whole.

    logprobs[k] = z_k[labels[k]] - logsumexp(z_k); entropy[k] = -sum_v p_v log p_v,
    p = softmax(z_k): the per-token log pi(y_t | x, y_<t) of the PPO ratio
    (arXiv:1707.06347, eq. 6) and the token entropy (arXiv:2506.01939), computed
    ``chunk_size`` rows at a time (arXiv:2410.10989).

    Shape: hidden (K, E), weight (V, E), bias (V,) or None, labels (K,) integer ids in
    [0, V). Returns a :class:`~lightrft.domain.token_logprobs.TokenLogprobs` of (K,)
    tensors (float32; float64 for float64 inputs). Gradients flow into ``hidden``,
    ``weight`` and ``bias`` from ``logprobs``, ``entropy`` or both (first order only).
    """
    _check_inputs(hidden, weight, bias, labels, temperature, chunk_size)
    apply = cast("Callable[..., tuple[Tensor, ...]]", _LinearTokenLogprobs.apply)
    outputs = apply(
        hidden, weight, bias, labels.long(), float(temperature), chunk_size, with_entropy
    )
    return TokenLogprobs(outputs[0], outputs[1] if with_entropy else None)


def _check_inputs(
    hidden: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    labels: Tensor,
    temperature: float,
    chunk_size: int,
) -> None:
    """Refuses bad shapes, dtypes, devices, temperatures, chunk sizes and label ids."""
    check_shape("hidden", hidden, (None, None))
    rows, width = hidden.shape
    check_shape("weight", weight, (None, width))
    vocab = weight.shape[0]
    if vocab == 0:
        raise ValueError(f"weight has an empty vocabulary dimension: shape {tuple(weight.shape)}")
    named = {"hidden": hidden, "weight": weight}
    if bias is not None:
        check_shape("bias", bias, (vocab,))
        named["bias"] = bias
    autocast = torch.is_autocast_enabled(hidden.device.type)
    for name, tensor in named.items():
        if not tensor.is_floating_point():
            raise TypeError(f"{name} must be a floating point tensor, got dtype {tensor.dtype}")
        if tensor.device != hidden.device:
            raise ValueError(f"{name} is on {tensor.device} but hidden is on {hidden.device}")
        if tensor.dtype != hidden.dtype and not autocast:
            raise TypeError(
                f"{name} has dtype {tensor.dtype} but hidden has {hidden.dtype}; outside "
                "autocast they must match (as for the LM head's nn.Linear)"
            )
    check_shape("labels", labels, (rows,))
    check_labels(labels, vocab, "weight", hidden.device)
    check_chunking(temperature, chunk_size)


class _LinearTokenLogprobs(torch.autograd.Function):
    """Autograd function: saves hidden, weight, bias, labels and per-row statistics."""

    @staticmethod
    def forward(
        ctx: Any,
        hidden: Tensor,
        weight: Tensor,
        bias: Tensor | None,
        labels: Tensor,
        temperature: float,
        chunk_size: int,
        with_entropy: bool,
    ) -> tuple[Tensor, ...]:
        """Shape: hidden (K, E), weight (V, E), bias (V,), labels (K,). Returns ((K,),) or
        ((K,), (K,))."""
        rows = hidden.shape[0]
        out_dtype = compute_dtype(torch.promote_types(hidden.dtype, weight.dtype))
        logprobs = hidden.new_empty(rows, dtype=out_dtype)
        norm = hidden.new_empty(rows, 2, dtype=out_dtype)
        entropy = torch.empty_like(logprobs) if with_entropy else None
        for start in range(0, rows, chunk_size):
            end = min(start + chunk_size, rows)
            logits = F.linear(hidden[start:end], weight, bias)  # [C, V]
            chunk_logprobs, chunk_norm, chunk_entropy = forward_chunk(
                logits, labels[start:end], temperature, with_entropy, owned=True
            )
            logprobs[start:end], norm[start:end] = chunk_logprobs, chunk_norm
            if entropy is not None and chunk_entropy is not None:
                entropy[start:end] = chunk_entropy
        ctx.set_materialize_grads(False)
        ctx.temperature, ctx.chunk_size = temperature, chunk_size
        device = hidden.device.type
        ctx.autocast = (
            device,
            torch.is_autocast_enabled(device),
            torch.get_autocast_dtype(device),
        )
        if entropy is None:
            ctx.save_for_backward(hidden, weight, bias, labels, norm)
            return (logprobs,)
        ctx.save_for_backward(hidden, weight, bias, labels, norm, entropy)
        return logprobs, entropy

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, *grads: Tensor | None) -> tuple[Tensor | None, ...]:
        """Shape: grads (K,) each (None when unused). Returns d/d hidden (K, E),
        d/d weight (V, E), d/d bias (V,) where the inputs need them."""
        hidden, weight, bias, labels, norm, *saved_entropy = ctx.saved_tensors
        none = (None,) * 4
        upstream = upstream_grads(grads, norm, saved_entropy)
        if upstream is None or not any(ctx.needs_input_grad[:3]):
            return (None, None, None, *none)
        g_lp, entropy_part = upstream
        need_hidden, need_weight, need_bias = ctx.needs_input_grad[:3]
        grads_out = _ChunkGrads(hidden, weight, bias, need_hidden, need_weight, need_bias)
        device, enabled, dtype = ctx.autocast
        step, temperature = ctx.chunk_size, ctx.temperature
        with torch.autocast(device, dtype=dtype, enabled=enabled):
            for start in range(0, hidden.shape[0], step):
                end = min(start + step, hidden.shape[0])
                logits = F.linear(hidden[start:end], weight, bias)  # [C, V]
                grad_z = backward_chunk(
                    chunk_log_softmax(logits, temperature, norm[start:end], owned=True),
                    labels[start:end],
                    temperature,
                    g_lp[start:end],
                    None if entropy_part is None else entropy_part[start:end],
                )
                grads_out.add(start, end, grad_z.to(logits.dtype))
        return (*grads_out.result(), *none)


class _ChunkGrads:
    """Accumulates the gradients of hidden (K, E), weight (V, E) and bias (V,) from the
    logits' gradient of one chunk of rows at a time; weight and bias in float32 (float64
    for float64 weights) so that summing many chunks loses nothing in half precision."""

    def __init__(
        self,
        hidden: Tensor,
        weight: Tensor,
        bias: Tensor | None,
        need_hidden: bool,
        need_weight: bool,
        need_bias: bool,
    ) -> None:
        self._hidden, self._weight, self._bias = hidden, weight, bias
        accumulate = compute_dtype(weight.dtype)
        self.hidden = torch.empty_like(hidden) if need_hidden else None
        self.weight = torch.zeros_like(weight, dtype=accumulate) if need_weight else None
        needed = need_bias and bias is not None
        self.bias = (
            torch.zeros_like(bias, dtype=accumulate) if needed and bias is not None else None
        )

    def add(self, start: int, end: int, grad_logits: Tensor) -> None:
        """Adds the contributions of rows [start, end). Shape: grad_logits (C, V)."""
        if self.hidden is not None:
            self.hidden[start:end] = grad_logits @ self._weight
        if self.weight is not None:
            self.weight.add_(grad_logits.t() @ self._hidden[start:end])
        if self.bias is not None:
            self.bias.add_(grad_logits.sum(0))

    def result(self) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
        """(d hidden, d weight, d bias), each in its input's dtype or None."""
        weight = None if self.weight is None else self.weight.to(self._weight.dtype)
        bias = None
        if self.bias is not None and self._bias is not None:
            bias = self.bias.to(self._bias.dtype)
        return self.hidden, weight, bias
