"""Per-token log-probabilities and entropy from logits, chunked to bound memory.

Shape letters: B samples, T tokens (positions), V vocabulary, N = B * T flattened rows,
C rows of one chunk (C <= ``chunk_size``).

The naive ``torch.log_softmax(logits.float() / temperature, -1)`` materializes a float32
(B, T, V) tensor and keeps it for backward; with B * T = 8k tokens and V = 150k that is
4.9 GB on top of the logits. Here the flattened rows are processed ``chunk_size`` at a
time: only a (C, V) slice is upcast to float32, backward keeps only the logits (which
exist anyway), the labels and two or three float32 numbers per row, and recomputes the
softmax of each chunk while writing into one gradient tensor of the logits' dtype. This
is the input-chunking idea of Liger-Kernel (arXiv:2410.10989) for the per-token
log-probs of PPO/GRPO (arXiv:1707.06347, arXiv:2402.03300) and the entropy bonus /
high-entropy token selection (arXiv:2506.01939).

Rows are independent: a row whose logits hold NaN/inf never influences another row, and
a row that receives a zero upstream gradient from both outputs (padding masked out by
the loss) gets an exactly zero gradient even if its logits are not finite.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, cast

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from lightrft.domain.checks import check_positive, check_shape

# exp(-1e4) is 0 in float32 and float64, so flooring log p there changes no p > 0 while
# keeping p * log p = 0 (not 0 * -inf = NaN) for vocabulary entries whose logit is -inf.
_LOG_FLOOR = -1.0e4


class TokenLogprobs(NamedTuple):
    """Result of :func:`token_logprobs`.

    ``logprobs``: Shape (B, T), log p(labels[b, t] | logits[b, t] / temperature).
    ``entropy``: Shape (B, T), entropy of softmax(logits[b, t] / temperature), or None
    when not requested. Both are float32 (float64 for float64 logits).
    """

    logprobs: Tensor
    entropy: Tensor | None


def token_logprobs(
    logits: Tensor,
    labels: Tensor,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    chunk_size: int = 1024,
) -> TokenLogprobs:
    """Log-prob of each label and (optionally) the entropy of each token distribution.

    logprobs[b, t] = z[labels[b, t]] - logsumexp(z), z = logits[b, t] / temperature;
    entropy[b, t] = -sum_v p_v log p_v, p = softmax(z). These are the per-token
    log pi(y_t | x, y_<t) inside the PPO probability ratio r_t (arXiv:1707.06347, eq. 6)
    and the token entropy H_t of the entropy bonus and of high-entropy token selection
    (arXiv:2506.01939); computed in row chunks as in Liger-Kernel (arXiv:2410.10989),
    never materializing a float32 (B, T, V) tensor.

    Shape: logits (B, T, V), any float dtype; labels (B, T), integer, already aligned with
    the logits (logits[b, t] predicts labels[b, t]) and inside [0, V): give padding
    positions any valid id and mask them in the loss. Returns (B, T) tensors. Gradients
    flow into ``logits`` from ``logprobs``, ``entropy`` or both (first order only).
    """
    _check_inputs(logits, labels, temperature, chunk_size)
    labels = labels.reshape(-1).long()  # [N]
    apply = cast("Callable[..., tuple[Tensor, ...]]", _ChunkedTokenLogprobs.apply)
    outputs = apply(logits, labels, float(temperature), chunk_size, with_entropy)
    return TokenLogprobs(outputs[0], outputs[1] if with_entropy else None)


def _check_inputs(logits: Tensor, labels: Tensor, temperature: float, chunk_size: int) -> None:
    """Refuses bad shapes, dtypes, devices, temperatures, chunk sizes and label ids."""
    check_shape("logits", logits, (None, None, None))
    if not logits.is_floating_point():
        raise TypeError(f"logits must be a floating point tensor, got dtype {logits.dtype}")
    batch, tokens, vocab = logits.shape
    if vocab == 0:
        raise ValueError(f"logits has an empty vocabulary dimension: shape {tuple(logits.shape)}")
    check_shape("labels", labels, (batch, tokens))
    check_labels(labels, vocab, "logits", logits.device)
    check_chunking(temperature, chunk_size)


def check_chunking(temperature: float, chunk_size: int) -> None:
    """Refuses a non-positive temperature and a chunk size that is not a positive int."""
    check_positive("temperature", temperature)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int (rows per chunk), got {chunk_size!r}")


def check_labels(labels: Tensor, vocab: int, source: str, device: torch.device) -> None:
    """Refuses non-integer ``labels``, labels off ``device`` and ids outside [0, vocab);
    ``source`` names the tensor that gives the vocabulary size and the device."""
    if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
        raise TypeError(f"labels must be an integer tensor of token ids, got dtype {labels.dtype}")
    if labels.device != device:
        raise ValueError(f"labels is on {labels.device} but {source} is on {device}")
    bad = (labels < 0) | (labels >= vocab)
    if bool(bad.any()):
        position = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(
            f"labels must lie in [0, {vocab}) (the vocabulary size of {source}), got "
            f"{int(labels[position])} at index {position}"
        )


class _ChunkedTokenLogprobs(torch.autograd.Function):
    """Autograd function: saves logits, labels and per-row statistics, never (N, V)."""

    @staticmethod
    def forward(
        ctx: Any,
        logits: Tensor,
        labels: Tensor,
        temperature: float,
        chunk_size: int,
        with_entropy: bool,
    ) -> tuple[Tensor, ...]:
        """Shape: logits (B, T, V), labels (N,). Returns ((B, T),) or ((B, T), (B, T))."""
        batch, tokens, _ = logits.shape
        rows = _RowReader(logits)
        out_dtype = compute_dtype(logits.dtype)
        logprobs = torch.empty(rows.count, dtype=out_dtype, device=logits.device)
        norm = torch.empty(rows.count, 2, dtype=out_dtype, device=logits.device)
        entropy = torch.empty_like(logprobs) if with_entropy else None
        for start in range(0, rows.count, chunk_size):
            end = min(start + chunk_size, rows.count)
            chunk_logprobs, chunk_norm, chunk_entropy = forward_chunk(
                rows.get(start, end), labels[start:end], temperature, with_entropy
            )
            logprobs[start:end], norm[start:end] = chunk_logprobs, chunk_norm
            if entropy is not None and chunk_entropy is not None:
                entropy[start:end] = chunk_entropy
        ctx.set_materialize_grads(False)
        ctx.temperature = temperature
        ctx.chunk_size = chunk_size
        if entropy is None:
            ctx.save_for_backward(logits, labels, norm)
            return (logprobs.view(batch, tokens),)
        entropy = entropy.view(batch, tokens)
        ctx.save_for_backward(logits, labels, norm, entropy)
        return logprobs.view(batch, tokens), entropy

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, *grads: Tensor | None) -> tuple[Tensor | None, ...]:
        """Shape: grads (B, T) each (None when unused). Returns d/d logits (B, T, V)."""
        logits, labels, norm, *saved_entropy = ctx.saved_tensors
        upstream = upstream_grads(grads, norm, saved_entropy)
        if upstream is None:
            return None, None, None, None, None
        g_lp, entropy_part = upstream
        rows = _RowReader(logits)
        grad = torch.empty(logits.shape, dtype=logits.dtype, device=logits.device)
        grad_rows = grad.view(-1, logits.shape[-1])  # [N, V]
        step = ctx.chunk_size
        for start in range(0, rows.count, step):
            end = min(start + step, rows.count)
            grad_rows[start:end] = backward_chunk(
                chunk_log_softmax(rows.get(start, end), ctx.temperature, norm[start:end]),
                labels[start:end],
                ctx.temperature,
                g_lp[start:end],
                None if entropy_part is None else entropy_part[start:end],
            )
        return grad, None, None, None, None


def upstream_grads(
    grads: tuple[Tensor | None, ...], norm: Tensor, saved_entropy: list[Tensor]
) -> tuple[Tensor, Tensor | None] | None:
    """The upstream gradients of (logprobs, entropy) as ``backward_chunk`` takes them:
    g_lp (N,) (zeros when only the entropy has one) and (g_H, H) (N, 2) per row or None;
    None when neither output has a gradient. ``norm`` (N, 2) gives the dtype."""
    grad_logprobs = grads[0]
    grad_entropy = grads[1] if len(grads) > 1 else None
    if grad_logprobs is None and grad_entropy is None:
        return None
    if grad_logprobs is None:
        g_lp = norm.new_zeros(norm.shape[0])
    else:
        g_lp = grad_logprobs.reshape(-1).to(norm.dtype)
    if grad_entropy is None:
        return g_lp, None
    g_h = grad_entropy.reshape(-1).to(norm.dtype)
    return g_lp, torch.stack([g_h, saved_entropy[0].reshape(-1)], dim=1)


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float32 for half/bfloat16/float32 logits, float64 for float64 logits."""
    return torch.promote_types(dtype, torch.float32)


def _scaled(rows: Tensor, temperature: float, owned: bool) -> Tensor:
    """z = rows / temperature, upcast: a fresh copy, or ``rows`` itself when ``owned`` (the
    caller's scratch tensor) and already in the compute dtype. Shape: (C, V) -> (C, V)."""
    z = rows.to(compute_dtype(rows.dtype), copy=not owned)
    return z if temperature == 1.0 else z.div_(temperature)


def chunk_log_softmax(
    rows: Tensor, temperature: float, norm: Tensor, *, owned: bool = False
) -> Tensor:
    """log p = (z - max z) - log sum exp(z - max z), as the forward computed it.

    Subtracting the two parts one after the other (not their sum, the logsumexp) keeps
    log p accurate when |z| is large. ``owned``: ``rows`` may be overwritten.
    Shape: rows (C, V), norm (C, 2) -> (C, V).
    """
    return _scaled(rows, temperature, owned).sub_(norm[:, :1]).sub_(norm[:, 1:])


def forward_chunk(
    rows: Tensor, labels: Tensor, temperature: float, with_entropy: bool, *, owned: bool = False
) -> tuple[Tensor, Tensor, Tensor | None]:
    """(log p(label), (max z, log sum exp(z - max z)), entropy or None) of one chunk.

    ``owned``: ``rows`` may be overwritten. Shape: rows (C, V), labels (C,); returns (C,),
    (C, 2), (C,) or None.
    """
    shifted = _scaled(rows, temperature, owned)
    row_max = shifted.amax(dim=-1)  # [C]
    shifted.sub_(row_max[:, None])
    exp_shifted = shifted.exp()  # [C, V]
    sum_exp = exp_shifted.sum(dim=-1)  # [C]
    log_norm = sum_exp.log()
    log_p = shifted.sub_(log_norm[:, None])  # [C, V], in place
    label_logprobs = log_p.gather(1, labels[:, None]).squeeze(1)
    norm = torch.stack([row_max, log_norm], dim=1)  # [C, 2]
    if not with_entropy:
        return label_logprobs, norm, None
    p = exp_shifted.div_(sum_exp[:, None])
    chunk_entropy = -p.mul_(log_p.clamp_(min=_LOG_FLOOR)).sum(dim=-1)  # H = -sum_v p log p
    return label_logprobs, norm, chunk_entropy


def backward_chunk(
    log_p: Tensor,
    labels: Tensor,
    temperature: float,
    g_lp: Tensor,
    entropy_part: Tensor | None,
) -> Tensor:
    """d loss / d logits of one chunk from its recomputed log-softmax (overwritten).

    With p = softmax(z), z = logits / temperature (chain rule: d z / d logits = 1/temperature):
    d logp_label / d z_j = 1[j = label] - p_j and d H / d z_j = p_j (E_p[z] - z_j)
    = -p_j (log p_j + H). So d / d z_j = g_lp (1[j = label] - p_j) - g_H p_j (log p_j + H).
    ``g_lp`` is zeros when only the entropy receives a gradient; ``entropy_part`` holds
    (g_H, H) per row, None when the entropy receives no gradient.
    Shape: log_p (C, V); labels, g_lp (C,); entropy_part (C, 2). Returns (C, V).
    """
    p = log_p.exp()
    active = g_lp != 0  # [C]
    lp_scale = (g_lp / -temperature)[:, None]  # [C, 1]
    if entropy_part is None:
        coef = lp_scale
    else:
        g_h, entropy = entropy_part[:, :1], entropy_part[:, 1:]  # [C, 1] each
        coef = log_p.clamp_(min=_LOG_FLOOR).add_(entropy).mul_(g_h / -temperature).add_(lp_scale)
        active = active | (g_h[:, 0] != 0)
    grad = p.mul_(coef)  # -p_j (g_lp + g_H (log p_j + H)) / temperature
    grad.scatter_add_(1, labels[:, None], (g_lp / temperature)[:, None])
    return grad.masked_fill_(~active[:, None], 0.0)


class _RowReader:
    """Reads rows [start, end) of logits (B, T, V) as (C, V) without copying all of it.

    Contiguous-enough logits are viewed as (N, V); others (e.g. a ``logits[:, :-1]``
    slice) are read per sample and only the chunk is concatenated.
    """

    def __init__(self, logits: Tensor) -> None:
        batch, tokens, vocab = logits.shape
        self._logits = logits
        self._tokens = tokens
        self.count = batch * tokens
        flat_ok = batch <= 1 or tokens <= 1 or logits.stride(0) == tokens * logits.stride(1)
        self._flat = logits.view(-1, vocab) if flat_ok else None

    def get(self, start: int, end: int) -> Tensor:
        """Shape: (end - start, V)."""
        if self._flat is not None:
            return self._flat[start:end]
        pieces = []
        row = start
        while row < end:
            sample, token = divmod(row, self._tokens)
            stop = min(end - row, self._tokens - token)
            pieces.append(self._logits[sample, token : token + stop])
            row += stop
        return pieces[0] if len(pieces) == 1 else torch.cat(pieces)
