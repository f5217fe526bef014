"""Drawing one token per row from next-token logits, as an inference engine does.

Shape letters: B rows, V vocabulary.
"""

from __future__ import annotations

import torch
from torch import Tensor


def filter_logits(
    logits: Tensor, *, top_k: int = 0, top_p: float = 1.0, min_p: float = 0.0
) -> Tensor:
    """Logits with the tokens outside the top-k / nucleus / min-p sets at ``-inf``.

    ``top_k=0``, ``top_p=1`` and ``min_p=0`` disable their filter; the most likely token
    always survives. Shape: (B, V) -> (B, V).
    """
    filtered = logits.clone()
    if 0 < top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]  # [B, 1]
        filtered[logits < kth] = -torch.inf
    probs = filtered.softmax(dim=-1)
    if top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # [B, V]
        drop_sorted = mass_before >= top_p
        drop = torch.zeros_like(drop_sorted).scatter(1, order, drop_sorted)
        filtered[drop] = -torch.inf
    if min_p > 0.0:
        floor = min_p * probs.max(dim=-1, keepdim=True).values  # [B, 1]
        filtered[probs < floor] = -torch.inf
    return filtered


def sample_tokens(
    logits: Tensor,
    temperature: float,
    generator: torch.Generator,
    *,
    top_k: int = 0,
    top_p: float = 1.0,
    min_p: float = 0.0,
) -> tuple[Tensor, Tensor]:
    """One token per row and its log-prob under ``softmax(logits / temperature)``.

    The log-prob is taken after temperature and before the top-k / top-p / min-p filters,
    so it equals the trainer's log-prob at the same temperature. ``temperature == 0`` is
    greedy (argmax) and reports log-probs at temperature 1.
    Shape: logits (B, V) -> tokens (B,) long, logprobs (B,) float32.
    """
    logits = logits.float()
    if temperature == 0:
        tokens = logits.argmax(dim=-1)
        logprobs = logits.log_softmax(dim=-1)
    else:
        scaled = logits / temperature
        logprobs = scaled.log_softmax(dim=-1)
        kept = filter_logits(scaled, top_k=top_k, top_p=top_p, min_p=min_p)
        probs = kept.softmax(dim=-1)
        tokens = torch.multinomial(probs.cpu(), 1, generator=generator).squeeze(1)
        tokens = tokens.to(logits.device)
    return tokens, logprobs.gather(1, tokens[:, None]).squeeze(1)
