"""The rollout's own entropy estimate: the mean negative log-prob of the sampled tokens.

Each generated token's engine log-prob is under the distribution it was drawn from (after
temperature), so the mean of ``-log p`` over the generated tokens is a Monte-Carlo estimate of
that distribution's per-token entropy (``rollout/sampled_nll``, nats). It exists for every
step, also one whose groups all scored alike and so trained no row (no ``train/entropy``),
which is when a policy that settled on one answer is seen (docs/health.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # domain.types imports torch; the health checks (and a config) need only the name
    from lightrft.domain.types import Completion

SAMPLED_NLL = "rollout/sampled_nll"
"""Metric name of :func:`sampled_nll`."""


def sampled_nll(completions: Sequence[Completion]) -> float | None:
    """Mean ``-logprob`` over the generated tokens (``trained_mask``) of ``completions``;
    ``None`` when a completion has no log-probs or no token was generated."""
    total, count = 0.0, 0
    for completion in completions:
        if completion.logprobs is None:
            return None
        for logprob, generated in zip(completion.logprobs, completion.trained_mask, strict=True):
            if generated:
                total -= logprob
                count += 1
    return total / count if count else None
