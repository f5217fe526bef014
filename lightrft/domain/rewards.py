"""Reward shaping that needs no model: overlong penalty, running normalization, clipping,
weighted composition of reward sources.

Shapes: B samples. Rewards are per sample, (B,). Rewards must be finite; an error names the
first bad row. Order of use in one step (ALGORITHMS.md): weighted sum of the sources,
overlong penalty, normalization, clip.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch import Tensor

from lightrft.domain.checks import (
    check_finite,
    check_non_negative,
    check_positive,
    check_same_shape,
    check_shape,
)
from lightrft.domain.reduce import AllReduceSum, local_sum


def overlong_penalty(
    response_lengths: Tensor, max_length: int, cache_length: int, factor: float = 1.0
) -> Tensor:
    """DAPO soft overlong punishment (arXiv:2503.14476, eq. 13).

    Shape: response_lengths (B,) -> (B,) float. With L_max = ``max_length`` (the generation
    budget) and L_cache = ``cache_length`` (the buffer before it), a length |y| gives
    0 if |y| <= L_max - L_cache; (L_max - L_cache - |y|) / L_cache * factor inside the
    buffer; -factor if |y| > L_max. The buffer expression lies in [-factor, 0), so the
    three cases are one clamp of it to [-factor, 0].
    """
    check_shape("response_lengths", response_lengths, (None,))
    check_finite("response_lengths", response_lengths)
    if bool((response_lengths < 0).any()):
        raise ValueError("response_lengths must be >= 0")
    check_positive("max_length", max_length)
    check_positive("cache_length", cache_length)
    if cache_length > max_length:
        raise ValueError(f"cache_length ({cache_length}) must not exceed max_length ({max_length})")
    check_non_negative("factor", factor)
    dtype = response_lengths.dtype
    lengths = response_lengths if dtype.is_floating_point else response_lengths.float()
    expected = max_length - cache_length  # longest length with no penalty
    in_buffer = (expected - lengths) / cache_length * factor
    return in_buffer.clamp(min=-factor, max=0.0)


@dataclass(frozen=True)
class RunningMoments:
    """Count, mean and sum of squared deviations (M2) of every value seen so far.

    Plain floats, so the state checkpoints as three numbers. Two states combine exactly
    with :meth:`merge` (Chan, Golub & LeVeque 1979, "Updating formulae and a pairwise
    algorithm for computing sample variances", eq. 2.1); ``RunningMoments()`` is the empty
    state and the identity of ``merge``.
    """

    count: float = 0.0
    mean: float = 0.0
    m2: float = 0.0

    def __post_init__(self) -> None:
        check_non_negative("count", self.count)
        check_non_negative("m2", self.m2)
        if not math.isfinite(self.mean):
            raise ValueError(f"mean must be finite, got {self.mean}")

    @classmethod
    def from_values(
        cls, values: Tensor, all_reduce_sum: AllReduceSum = local_sum
    ) -> RunningMoments:
        """Moments of ``values`` (B,) over every data-parallel rank.

        Two all-reduces: (count, sum) gives the global mean, then the sum of squared
        deviations from that mean gives M2 (exact, unlike summing raw squares). A rank may
        hold no values; if no rank holds any the result is the empty state.
        """
        check_shape("values", values, (None,))
        check_finite("values", values)
        v = values.detach().to(torch.float64)
        totals = all_reduce_sum(torch.stack([v.new_tensor(float(v.numel())), v.sum()]))
        count = float(totals[0])
        if count == 0:
            return cls()
        mean = float(totals[1]) / count
        m2 = float(all_reduce_sum(((v - mean) ** 2).sum()))
        return cls(count, mean, m2)

    def merge(self, other: RunningMoments) -> RunningMoments:
        """The moments of both value sets together (Chan et al. 1979, eq. 2.1).

        n = n_a + n_b; d = mean_b - mean_a; mean = mean_a + d n_b / n;
        M2 = M2_a + M2_b + d^2 n_a n_b / n.
        """
        count = self.count + other.count
        if count == 0:
            return RunningMoments()
        delta = other.mean - self.mean
        mean = self.mean + delta * other.count / count
        m2 = self.m2 + other.m2 + delta * delta * self.count * other.count / count
        return RunningMoments(count, mean, m2)

    def update(self, values: Tensor, all_reduce_sum: AllReduceSum = local_sum) -> RunningMoments:
        """These moments merged with those of ``values`` (B,) from every rank."""
        return self.merge(RunningMoments.from_values(values, all_reduce_sum))

    @property
    def variance(self) -> float:
        """Bessel-corrected variance M2 / (n - 1); 0 with fewer than two values."""
        return self.m2 / (self.count - 1) if self.count > 1 else 0.0

    @property
    def std(self) -> float:
        """Bessel-corrected standard deviation; 0 with fewer than two values."""
        return math.sqrt(self.variance)


def normalize_rewards(
    rewards: Tensor, moments: RunningMoments, subtract_mean: bool = True, eps: float = 1e-8
) -> Tensor:
    """(r - mean) / (std + eps), or r / (std + eps) without mean subtraction.

    Shape: rewards (B,) -> (B,). Update ``moments`` with this batch first, so they hold at
    least these rewards (empty moments are an error).
    """
    check_shape("rewards", rewards, (None,))
    check_finite("rewards", rewards)
    check_positive("eps", eps)
    if moments.count == 0:
        raise ValueError("moments hold no values; update them with the rewards first")
    centered = rewards - moments.mean if subtract_mean else rewards
    return centered / (moments.std + eps)


def clip_values(values: Tensor, bound: float) -> Tensor:
    """Clamps rewards or advantages to [-bound, bound], element-wise. Shape: any -> same."""
    check_positive("bound", bound)
    return values.clamp(min=-bound, max=bound)


def weighted_reward_sum(scores: Mapping[str, Tensor], weights: Mapping[str, float]) -> Tensor:
    """Composite reward sum_s w_s * score_s over reward sources s.

    Shape: each score (B,) -> (B,). ``scores`` and ``weights`` must name the same sources;
    the sum runs in sorted name order, so it does not depend on mapping order.
    """
    missing = sorted(set(weights) - set(scores))
    extra = sorted(set(scores) - set(weights))
    if missing or extra:
        raise ValueError(
            f"scores and weights must name the same reward sources; no score for {missing}, "
            f"no weight for {extra}"
        )
    if not scores:
        raise ValueError("scores is empty; need at least one reward source")
    names = sorted(scores)
    reference = f"scores[{names[0]!r}]"
    check_shape(reference, scores[names[0]], (None,))
    terms = []
    for name in names:
        score = scores[name]
        check_same_shape(reference, scores[names[0]], **{f"scores[{name!r}]": score})
        check_finite(f"scores[{name!r}]", score)
        weight = weights[name]
        if not math.isfinite(weight):
            raise ValueError(f"weights[{name!r}] must be finite, got {weight}")
        if not score.is_floating_point():
            score = score.to(torch.get_default_dtype())
        terms.append(weight * score)
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def gate_rewards(
    total: Tensor, gate_scores: Mapping[str, Tensor], thresholds: Mapping[str, float], value: float
) -> tuple[Tensor, Tensor]:
    """Samples that fail a gate get ``value`` instead of their reward.

    A sample passes when every gate source's score is >= that gate's threshold (e.g. a
    format check with threshold 1: the format must pass, else the reward is ``value``).
    Shape: total (B,), each gate score (B,) -> (rewards (B,), passed (B,) bool).
    """
    check_shape("total", total, (None,))
    if not math.isfinite(value):
        raise ValueError(f"gate value must be finite, got {value}")
    passed = torch.ones_like(total, dtype=torch.bool)
    for name, threshold in thresholds.items():
        if name not in gate_scores:
            raise ValueError(
                f"gate {name!r} names no reward source; sources: {sorted(gate_scores)}"
            )
        score = gate_scores[name]
        check_same_shape("total", total, **{f"scores[{name!r}]": score})
        passed &= score >= threshold
    return torch.where(passed, total, torch.full_like(total, value)), passed
