"""Evaluation metrics over the n samples of one prompt: pass@k and majority voting.

pass@k is the unbiased estimator of Chen et al. 2021 (arXiv:2107.03374, eq. 1):
1 - C(n - c, k) / C(n, k) for n samples of which c are correct, evaluated as the product
1 - prod_{i = n-c+1}^{n} (1 - k / i), which never forms the (huge) binomials.

Majority voting (maj@k, self-consistency): each sample with an extracted answer votes for
its answer's *key* (equivalent answers share a key); samples without an answer do not vote.
The winner has the most votes; a tie goes to the tied answer that appeared first. No vote at
all means no winner. maj@k votes over the first k samples of a prompt, and is correct when
the winning answer is.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import NamedTuple, TypeVar

K = TypeVar("K", bound=Hashable)


def pass_at_k(num_samples: int, num_correct: int, k: int) -> float:
    """Probability that at least one of k samples drawn without replacement is correct."""
    if not 0 < k <= num_samples:
        raise ValueError(f"k must be in [1, {num_samples}], got {k}")
    if not 0 <= num_correct <= num_samples:
        raise ValueError(f"num_correct must be in [0, {num_samples}], got {num_correct}")
    if num_samples - num_correct < k:
        return 1.0
    miss = 1.0
    for i in range(num_samples - num_correct + 1, num_samples + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


def majority_vote(keys: Sequence[K | None]) -> int | None:
    """Index of the first sample holding the winning key (rules in the module docstring)."""
    counts: dict[K, int] = {}
    first: dict[K, int] = {}
    for index, key in enumerate(keys):
        if key is None:
            continue
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, index)
    if not counts:
        return None
    winner = max(counts, key=lambda key: (counts[key], -first[key]))
    return first[winner]


def maj_at_k(keys: Sequence[K | None], correct: Sequence[bool], k: int) -> float:
    """1.0 when the majority answer of the first ``k`` samples is correct, else 0.0."""
    if not 0 < k <= len(keys) or len(keys) != len(correct):
        raise ValueError(f"need 1 <= k <= {len(keys)} and one correctness per key, got k={k}")
    winner = majority_vote(keys[:k])
    return 0.0 if winner is None else float(correct[winner])


class GradedAnswer(NamedTuple):
    """One response judged: ``key`` identifies its extracted answer (equivalent answers
    share a key; ``None``: no answer found); ``correct`` is ``None`` without a reference."""

    key: str | None
    correct: bool | None
