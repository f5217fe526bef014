"""``sampled_nll``: the mean negative log-prob of the generated tokens, an estimate of the
sampling distribution's per-token entropy (hand-computed values; observation tokens of an
episode do not count)."""

from __future__ import annotations

import math

import pytest
import torch

from lightrft.domain.sampled_entropy import sampled_nll
from lightrft.domain.types import Completion


def _completion(logprobs: list[float] | None, mask: list[int] | None = None) -> Completion:
    n = len(logprobs) if logprobs is not None else 2
    lps = tuple(logprobs) if logprobs is not None else None
    mask_t = tuple(mask) if mask is not None else None
    return Completion(0, tuple(range(n)), "x", "stop", lps, mask_t)


def test_the_mean_over_generated_tokens_by_hand() -> None:
    a = _completion([-0.5, -1.5])
    b = _completion([-2.0, 0.0, -0.1], mask=[1, 0, 1])  # the middle token is an observation
    assert sampled_nll([a, b]) == pytest.approx((0.5 + 1.5 + 2.0 + 0.1) / 4)


def test_none_without_log_probs_or_generated_tokens() -> None:
    assert sampled_nll([_completion([-0.5]), _completion(None)]) is None
    assert sampled_nll([_completion([-0.5], mask=[0])]) is None
    assert sampled_nll([]) is None


def test_it_estimates_the_entropy_of_the_distribution_sampled_from() -> None:
    probs = torch.tensor([0.7, 0.2, 0.1])
    entropy = float(-(probs * probs.log()).sum())
    draws = torch.multinomial(
        probs, 20000, replacement=True, generator=torch.Generator().manual_seed(0)
    )
    logprobs = probs.log()[draws].tolist()
    estimate = sampled_nll([_completion(logprobs)])
    assert estimate is not None and math.isclose(estimate, entropy, rel_tol=0.02)
