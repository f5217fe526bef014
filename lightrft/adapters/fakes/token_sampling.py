"""Drawing one token per row from next-token logits, as an inference engine does.

The filters are the domain's :func:`~lightrft.domain.sampling.filter_logits`, as in the
HF engine. Shape letters: B rows, V vocabulary.
"""

from __future__ import annotations

import torch
from torch import Tensor

from lightrft.domain.sampling import filter_logits


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
