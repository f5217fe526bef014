"""Which samples and tokens to train on, and how to sample them.

- DAPO dynamic sampling (arXiv:2503.14476 §3.2, constraint 0 < |correct| < G): keep only
  groups whose rewards are not all equal, and refill until enough groups are kept or a
  round limit is hit.
- High-entropy token selection ("Beyond the 80/20 rule", arXiv:2506.01939): train only on
  the top rho fraction of response tokens by entropy.
- FIRE sampling (arXiv:2410.21236): the first response token at a high temperature.
- Next-token filters of an inference engine: top-k, top-p (nucleus), min-p.
- One decode step of the HF engine (:func:`next_tokens`): the distribution of a response
  position, its log-probs and one seeded draw per row.

Shapes: B samples, G group size, R response tokens, V vocabulary. ``group_index`` (B,) holds
one id per prompt; samples with equal ids form a group. Masks are True/1 where a token
counts; padding (mask 0) never influences a result, whatever it holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from lightrft.domain.checks import (
    check_finite,
    check_non_negative,
    check_positive,
    check_shape,
    check_token_tensor,
)
from lightrft.domain.groups import dense_group_ids
from lightrft.domain.types import SamplingParams


def informative_group_mask(rewards: Tensor, group_index: Tensor) -> Tensor:
    """True for samples whose group's rewards are not all equal (DAPO dynamic sampling).

    Shape: rewards (B,), group_index (B,) -> bool (B,). A group of one is uninformative.
    Equality is exact (group min == group max), so float rounding in a mean/std cannot
    turn an all-equal group into an informative one.
    """
    check_shape("rewards", rewards, (None,))
    check_shape("group_index", group_index, (rewards.shape[0],))
    check_finite("rewards", rewards)
    ids, k = dense_group_ids(group_index)
    low = torch.full((k,), math.inf, dtype=torch.float64, device=rewards.device)
    high = torch.full((k,), -math.inf, dtype=torch.float64, device=rewards.device)
    values = rewards.detach().to(torch.float64)
    low = low.scatter_reduce(0, ids, values, reduce="amin")
    high = high.scatter_reduce(0, ids, values, reduce="amax")
    return (high > low)[ids]


def _check_count(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class DynamicSamplingState:
    """Progress of DAPO's refill loop: groups kept so far and generation rounds used.

    The application loops ``while not state.done``: generate, filter with
    :func:`informative_group_mask`, ``state = state.after_round(n_informative)``. The loop
    ends when ``kept_groups >= target_groups`` or after ``max_rounds`` rounds; then
    ``hit_round_limit`` says whether it trains on fewer groups than asked for.
    """

    kept_groups: int = 0
    rounds: int = 0
    target_groups: int
    max_rounds: int

    def __post_init__(self) -> None:
        _check_count("kept_groups", self.kept_groups, 0)
        _check_count("rounds", self.rounds, 0)
        _check_count("target_groups", self.target_groups, 1)
        _check_count("max_rounds", self.max_rounds, 1)

    def after_round(self, num_informative_groups: int) -> DynamicSamplingState:
        """The state after one more generation round that kept ``num_informative_groups``."""
        _check_count("num_informative_groups", num_informative_groups, 0)
        if self.done:
            raise ValueError(
                f"dynamic sampling is already done ({self.kept_groups}/{self.target_groups} "
                f"groups after {self.rounds}/{self.max_rounds} rounds); start a new state"
            )
        return replace(
            self, kept_groups=self.kept_groups + num_informative_groups, rounds=self.rounds + 1
        )

    @property
    def done(self) -> bool:
        """Enough groups kept, or no round left."""
        return self.kept_groups >= self.target_groups or self.rounds >= self.max_rounds

    @property
    def hit_round_limit(self) -> bool:
        """The round limit ended the loop before enough groups were kept."""
        return self.rounds >= self.max_rounds and self.kept_groups < self.target_groups


def high_entropy_token_mask(entropy: Tensor, response_mask: Tensor, top_fraction: float) -> Tensor:
    """Keeps the ceil(rho * n) highest-entropy tokens of the n masked tokens in the batch.

    "Beyond the 80/20 rule" (arXiv:2506.01939): the policy loss only sees tokens with
    H_t >= the batch's top-rho entropy threshold. Shape: entropy, response_mask (B, R) ->
    bool (B, R). rho = ``top_fraction`` in (0, 1]; rounding up (after rounding rho * n to
    9 decimals, so float noise cannot add a token) keeps at least one token.
    Ties are broken by position in row-major order (earlier tokens first), so exactly
    ceil(rho * n) tokens are kept. Call it once on the whole local batch, not per
    micro-batch (the threshold is over the tokens passed in).
    """
    check_token_tensor("entropy", entropy, response_mask)
    if not 0 < top_fraction <= 1:
        raise ValueError(f"top_fraction must be in (0, 1], got {top_fraction}")
    keep = response_mask.bool()
    check_finite("entropy (where response_mask is set)", torch.where(keep, entropy, 0.0))
    n = int(keep.sum())
    # Round before ceil so that 0.28 * 25 = 7.000000000000001 keeps 7 tokens, not 8.
    k = max(1, math.ceil(round(top_fraction * n, 9)))
    scores = torch.where(keep, entropy.detach(), -math.inf).flatten()
    order = torch.sort(scores, descending=True, stable=True).indices
    selected = torch.zeros_like(scores, dtype=torch.bool)
    selected[order[:k]] = True
    return selected.view_as(keep)


@dataclass(frozen=True)
class FireSchedule:
    """FIRE sampling (arXiv:2410.21236): token 0 at ``first_token_temperature``, the rest at
    ``temperature``. Positions count response tokens from 0."""

    first_token_temperature: float
    temperature: float

    def __post_init__(self) -> None:
        check_positive("first_token_temperature", self.first_token_temperature)
        check_non_negative("temperature", self.temperature)

    def temperature_at(self, position: int) -> float:
        """Sampling temperature of response token ``position`` (>= 0)."""
        _check_count("position", position, 0)
        return self.first_token_temperature if position == 0 else self.temperature

    def token_temperatures(self, length: int, device: torch.device | None = None) -> Tensor:
        """Temperatures of a ``length``-token response. Shape: (R,), default float dtype."""
        _check_count("length", length, 0)
        temperatures = torch.full((length,), self.temperature, device=device)
        temperatures[:1] = self.first_token_temperature
        return temperatures


def token_temperature(sampling: SamplingParams, position: int) -> float:
    """Temperature of response token ``position`` (>= 0) under ``sampling``: FIRE's
    ``first_token_temperature`` for token 0 when it is set, else ``sampling.temperature``."""
    if sampling.first_token_temperature is None:
        _check_count("position", position, 0)
        return sampling.temperature
    fire = FireSchedule(sampling.first_token_temperature, sampling.temperature)
    return fire.temperature_at(position)


def filter_logits(
    logits: Tensor, *, top_k: int = 0, top_p: float = 1.0, min_p: float = 0.0
) -> Tensor:
    """Next-token logits with the tokens outside top-k, then top-p, then min-p at ``-inf``.

    Shape: (N, V) -> (N, V), same dtype; pass logits already divided by the temperature.
    The order is that of ``transformers``' warpers; each filter sees the distribution
    renormalized over the tokens the previous ones kept:

    1. top-k: keep the k largest logits (ties at the k-th value are kept);
    2. top-p (nucleus, arXiv:1904.09751): keep the smallest set of most likely tokens whose
       probability reaches p (a token is dropped when the mass of likelier ones is >= p);
    3. min-p (arXiv:2407.01082): keep tokens with probability >= min_p * the largest one.

    ``top_k=0``, ``top_p=1`` and ``min_p=0`` turn their filter off. The most likely token
    always survives, so every row keeps at least one finite logit.
    """
    check_shape("logits", logits, (None, None))
    if top_k < 0 or not 0.0 < top_p <= 1.0 or not 0.0 <= min_p <= 1.0:
        raise ValueError(
            f"need top_k >= 0, 0 < top_p <= 1, 0 <= min_p <= 1; got top_k={top_k}, "
            f"top_p={top_p}, min_p={min_p}"
        )
    z = logits
    if 0 < top_k < z.shape[-1]:
        kth = torch.topk(z, top_k, dim=-1).values[:, -1:]  # [N, 1]
        z = z.masked_fill(z < kth, -math.inf)
    if top_p < 1.0:
        sorted_z, order = torch.sort(z, dim=-1, descending=True)
        sorted_p = torch.softmax(sorted_z, dim=-1)
        mass_before = torch.cumsum(sorted_p, dim=-1) - sorted_p  # [N, V] of likelier tokens
        drop = torch.zeros_like(mass_before, dtype=torch.bool)
        z = z.masked_fill(drop.scatter(-1, order, mass_before >= top_p), -math.inf)
    if min_p > 0.0:
        probs = torch.softmax(z, dim=-1)
        threshold = min_p * probs.max(dim=-1, keepdim=True).values  # [N, 1]
        z = z.masked_fill(probs < threshold, -math.inf)
    return z


@dataclass(frozen=True)
class TokenDistribution:
    """How one decoding step samples: temperature 0 means greedy."""

    temperature: float
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0

    @classmethod
    def at(cls, sampling: SamplingParams, position: int) -> TokenDistribution:
        """The distribution of response token ``position`` (FIRE sets token 0's temperature)."""
        temperature = token_temperature(sampling, position)
        return cls(temperature, sampling.top_k, sampling.top_p, sampling.min_p)


def sampling_logprobs(logits: Tensor, dist: TokenDistribution) -> Tensor:
    """Log-probs (N, V) of the distribution a token is drawn from, built in this order (as in
    ``transformers`` and vLLM):

    1. z = logits / temperature;
    2. top-k, top-p, min-p in that order (:func:`filter_logits`);
    3. log-probs = log_softmax of the kept z (removed tokens get -inf).

    So the reported log-prob is that of the filtered, renormalized distribution actually
    sampled from; with no filter it equals the policy's log-prob at the same temperature.
    Greedy decoding (temperature 0) reports the plain log_softmax(logits) (temperature 1, no
    filter): the policy's log-prob at temperature 1.
    Shape: logits (N, V) -> (N, V) float32, -inf for filtered tokens.
    """
    z = logits.float()
    if dist.temperature == 0:
        return torch.log_softmax(z, dim=-1)
    kept = filter_logits(z / dist.temperature, top_k=dist.top_k, top_p=dist.top_p, min_p=dist.min_p)
    return torch.log_softmax(kept, dim=-1)


def draw(
    logprobs: Tensor,
    greedy: bool,
    generator: torch.Generator | Sequence[torch.Generator] | None,
) -> Tensor:
    """One token per row: argmax if ``greedy`` else a draw. Shape: (N, V) -> (N,) long.

    ``generator`` is one generator for the whole batch, or one per row (then each row's
    draws do not depend on which other rows share the batch). A draw is an inverse-CDF
    search: one uniform u per row, the token is the first whose cumulative probability
    exceeds u times the row's total (a filtered token, p = 0, adds no width and is never
    chosen). One uniform per row keeps the per-row streams cheap; the search over all rows
    is one vectorized call.
    """
    if greedy:
        return logprobs.argmax(dim=-1)
    n = logprobs.shape[0]
    device = logprobs.device
    if generator is None or isinstance(generator, torch.Generator):
        u = torch.rand(n, 1, generator=generator, device=device)
    else:
        if len(generator) != n:
            raise ValueError(f"got {len(generator)} generators for {n} rows")
        u = torch.cat([torch.rand(1, generator=g, device=device) for g in generator])[:, None]
    cdf = logprobs.exp().cumsum(dim=-1)  # [N, V] float32
    total = cdf[:, -1:]  # [N, 1]
    # u * total may round up to total; the float just below it still finds the last token
    # with p > 0 (searching the total itself would run past the end)
    target = torch.minimum(u * total, torch.nextafter(total, torch.zeros_like(total)))
    return torch.searchsorted(cdf, target, right=True).squeeze(-1)  # [N]


def next_tokens(
    logits: Tensor,
    sampling: SamplingParams,
    position: int,
    generator: torch.Generator | Sequence[torch.Generator] | None,
) -> tuple[Tensor, Tensor]:
    """One decode step: the tokens at response ``position`` and their log-probs.

    The distribution is :meth:`TokenDistribution.at` (FIRE's temperature for token 0), the
    log-probs :func:`sampling_logprobs`, the tokens :func:`draw` (greedy at temperature 0).
    Shape: logits (N, V) -> tokens (N,) long, log-probs (N,) float32.
    """
    dist = TokenDistribution.at(sampling, position)
    logprobs = sampling_logprobs(logits, dist)  # [N, V]
    tokens = draw(logprobs, dist.temperature == 0, generator)  # [N]
    return tokens, logprobs.gather(-1, tokens[:, None]).squeeze(-1)
