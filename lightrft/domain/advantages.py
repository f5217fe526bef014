"""Advantage estimators: outcome rewards (plus critic values or KL) -> per-token advantages.

Shapes: B samples, G samples in one group (the responses to one prompt), R response tokens.
``response_mask`` (B, R) is 1 where a response token counts; padding never influences a
result, whatever it holds (even NaN). Masks need not be left-aligned: token-level
estimators (``reinforce_pp``, ``gae``) treat masked-out positions as absent, so the "last
token" of a row is its last masked token and the "next token" is the next masked one.

Every estimator has the same signature ``compute(inputs, params, all_reduce_sum)`` and is
registered under the name users type in a config (ALGORITHMS.md, "Advantage estimators").
The flags on :class:`AdvantageEstimator` tell the application which optional inputs to
provide, so it never branches on a name. Call :func:`compute_advantages`, which validates.

Turn-level credit (``inputs.token_rewards``, multi-turn episodes; docs/agents.md): each
turn's reward sits on that turn's last generated token. Token-level estimators read these
token rewards instead of the outcome reward on the last token; group-baseline estimators
score each token by its reward-to-go G (the sum of the token rewards from it on: the
rewards of its own turn and the later ones) with the group's statistics of the outcome
rewards, e.g. grpo: A_t = (G_t - mean_group r) / (std_group r + eps). The first turn's
G is the outcome reward, so with rewards on the last turn only both equal the plain
estimator.

Groups: a group of one sample has no baseline, so group-baseline estimators give it
advantage 0 and warn (:class:`SingletonGroupWarning`, once per call); a group whose rewards
are all equal gets exactly 0, never NaN.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import torch
from torch import Tensor

from lightrft.domain import algorithm_registries
from lightrft.domain.advantage_params import AdvantageParams as AdvantageParams
from lightrft.domain.checks import (
    check_finite,
    check_mask,
    check_shape,
)
from lightrft.domain.distillation import teacher_advantages
from lightrft.domain.groups import GroupStats, dense_group_ids, group_stats, groups_all_equal
from lightrft.domain.kl import kl_in_reward
from lightrft.domain.masked import masked_mean, masked_whiten
from lightrft.domain.reduce import AllReduceSum, local_sum
from lightrft.domain.registry import Registry


class SingletonGroupWarning(UserWarning):
    """A group holds one sample: it has no baseline and its advantage is set to 0."""


@dataclass(frozen=True)
class AdvantageInputs:
    """What an estimator reads. Optional fields are required by the estimator's flags."""

    rewards: Tensor  # Shape (B,): outcome reward per sample (must be finite)
    response_mask: Tensor  # Shape (B, R): 1 where a response token counts
    group_index: Tensor  # Shape (B,): integer id of the prompt each sample answers
    values: Tensor | None = None  # Shape (B, R): critic values V_t (gae only)
    kl: Tensor | None = None  # Shape (B, R): per-token KL estimate k_t (KL-in-reward estimators)
    baseline_rewards: Tensor | None = None  # Shape (B,): reward of a greedy rollout (remax)
    logprobs: Tensor | None = None  # Shape (B, R): the sampling policy's log-probs (opd)
    teacher_logprobs: Tensor | None = None  # Shape (K, B, R): each teacher's log-probs (opd)
    # Shape (B, R): turn-level credit: each turn's reward on its last generated token, 0
    # elsewhere; a row sums to its ``rewards`` (estimators with ``turn_credit`` only)
    token_rewards: Tensor | None = None
    # Shape (B, R): process rewards, each step's score on the step's last token, and the mask
    # (B, R) of those tokens (estimators with ``needs_step_rewards``; domain/process_rewards.py)
    step_rewards: Tensor | None = None
    step_mask: Tensor | None = None
    # Shape (B, R): the engine's log-probs of the sampled tokens, under the distribution they
    # were drawn from (the gate of ``params.alike_group_max_entropy``)
    sampled_logprobs: Tensor | None = None


@dataclass(frozen=True)
class AdvantageOutput:
    """Advantages and returns, both (B, R) and 0 where ``response_mask`` is 0."""

    advantages: Tensor  # Shape (B, R)
    returns: Tensor  # Shape (B, R): gae: A + V; reinforce_pp: discounted returns; else advantages
    metrics: Mapping[str, Tensor]  # detached scalars over the local batch


Compute = Callable[[AdvantageInputs, AdvantageParams, AllReduceSum], AdvantageOutput]


@dataclass(frozen=True)
class AdvantageEstimator:
    """A registered estimator and the inputs it needs."""

    name: str
    compute: Compute
    kl_in_reward: bool = False  # True: the cycle passes `kl`; no KL term goes in the loss
    needs_values: bool = False  # True: needs a critic (gae)
    needs_baseline_rewards: bool = False  # True: needs a greedy rollout reward (remax)
    uses_groups: bool = True  # False: group_index is ignored
    needs_teachers: bool = False  # True: needs logprobs and teacher_logprobs (opd)
    turn_credit: bool = False  # True: reads inputs.token_rewards when given
    needs_step_rewards: bool = False  # True: needs step_rewards and step_mask (process rewards)
    alike_groups: bool = False  # True: reads params.alike_group_advantage


ADVANTAGE_ESTIMATORS: Registry[AdvantageEstimator] = algorithm_registries.ADVANTAGE_ESTIMATORS


def _require(estimator: str, field: str, tensor: Tensor | None) -> Tensor:
    if tensor is None:
        raise ValueError(f"advantage estimator {estimator!r} needs inputs.{field}; got None")
    return tensor


def _as_float(tensor: Tensor) -> Tensor:
    return tensor if tensor.is_floating_point() else tensor.to(torch.get_default_dtype())


def _per_token(score: Tensor, mask: Tensor) -> Tensor:
    """Broadcasts a per-sample score (B,) over the masked tokens of mask (B, R) (a per-token
    score (B, R) is kept); 0 elsewhere."""
    return torch.where(mask, score if score.dim() == 2 else score.unsqueeze(-1), 0.0)


def _alike_scores(
    rewards: Tensor,
    alike: Tensor,
    params: AdvantageParams,
    all_reduce_sum: AllReduceSum,
    totals: Tensor,
) -> Tensor:
    """c (r_i - m) / (s + eps) on the samples where ``alike`` (B,) is True, 0 elsewhere;
    c = ``params.alike_group_advantage``, m and s the mean and population std of the
    batch's rewards (all ranks: ``totals`` from :func:`_batch_totals`, the spread summed with
    ``all_reduce_sum``); all 0 when they are all the same."""
    count = totals[1].clamp(min=1)
    mean = totals[0] / count
    spread = all_reduce_sum(((rewards - mean) ** 2).sum()) / count
    scale = params.alike_group_advantage / (spread.sqrt() + params.eps)
    return torch.where(alike & (spread > 0), (rewards - mean) * scale, 0.0)


def _batch_totals(
    inputs: AdvantageInputs, params: AdvantageParams, all_reduce_sum: AllReduceSum
) -> Tensor:
    """In one all-reduce over ranks: the batch's reward sum and sample count and, with
    ``alike_group_max_entropy``, the sampled tokens' summed -log p and their count."""
    rewards = _as_float(inputs.rewards)
    sums = [rewards.sum(), rewards.new_tensor(rewards.numel())]
    if params.alike_group_max_entropy is not None:
        logprobs = _require("alike_group_max_entropy", "sampled_logprobs", inputs.sampled_logprobs)
        mask = inputs.response_mask.bool()
        sums += [-torch.where(mask, logprobs.to(rewards.dtype), 0.0).sum(), mask.sum()]
    return all_reduce_sum(torch.stack([part.to(rewards.dtype) for part in sums]))


def _alike_gate(totals: Tensor, params: AdvantageParams) -> Tensor:
    """Whether this batch's alike groups train (a 0-dim bool), from :func:`_batch_totals`:
    its sampled entropy estimate (mean -log p of the sampled tokens) below
    ``alike_group_max_entropy`` and its mean reward below ``alike_group_max_reward``, each
    when set."""
    gate = torch.ones((), dtype=torch.bool, device=totals.device)
    if params.alike_group_max_reward is not None:
        gate &= totals[0] / totals[1].clamp(min=1) < params.alike_group_max_reward
    if params.alike_group_max_entropy is not None:
        gate &= totals[2] / totals[3].clamp(min=1) < params.alike_group_max_entropy
    return gate


def _group_scores(
    inputs: AdvantageInputs,
    centered: Callable[[Tensor, GroupStats], Tensor],
    weights: Tensor | None = None,
    alike: tuple[AdvantageParams, AllReduceSum] | None = None,
) -> tuple[Tensor, Tensor, dict[str, Tensor]]:
    """Per-sample ``centered(rewards, stats)`` (B,), 0 for samples without a baseline; with
    ``inputs.token_rewards``, per token ``centered(G, stats)`` (B, R), G the reward-to-go.
    With ``alike`` (params, all-reduce) and ``params.alike_group_advantage`` > 0, the
    samples of groups (of two or more) whose rewards are all equal get
    :func:`_alike_scores` instead of 0 on a batch :func:`_alike_gate` lets through.

    Returns (score, informative (B,) bool, group metrics). A sample is informative
    when its group has two or more samples whose rewards are not all equal.
    """
    rewards = _as_float(inputs.rewards)
    stats = group_stats(rewards, inputs.group_index, weights)
    ids, k = dense_group_ids(inputs.group_index)
    equal = groups_all_equal(rewards, ids, k)[0][ids]  # [B]; singletons are trivially equal
    singleton = stats.size == 1
    if bool(singleton.any()):
        warnings.warn(
            "some groups hold a single sample (no baseline); their advantage is 0 "
            "(see metric groups/singleton)",
            SingletonGroupWarning,
            stacklevel=4,
        )
    fallback = torch.zeros_like(rewards)
    gate_metrics: dict[str, Tensor] = {}
    if alike is not None and alike[0].alike_group_advantage > 0:
        totals = _batch_totals(inputs, *alike)
        gate = _alike_gate(totals, alike[0])
        scores = _alike_scores(rewards, equal & ~singleton, *alike, totals)
        fallback = torch.where(gate, scores, 0.0)
        gate_metrics["groups/alike_trained"] = gate.to(rewards.dtype)
    score = torch.where(equal, fallback, centered(rewards, stats))
    if inputs.token_rewards is not None:
        mask = inputs.response_mask.bool()
        to_go = _discounted_sum(inputs.token_rewards.to(rewards.dtype), mask, 1.0)
        per_token = GroupStats(*(part.unsqueeze(-1) for part in stats))
        score = torch.where(equal.unsqueeze(-1), fallback.unsqueeze(-1), centered(to_go, per_token))
    metrics = {
        "groups/singleton": singleton.to(rewards.dtype).sum(),
        "groups/zero_std": ((equal & ~singleton).to(rewards.dtype) / stats.size).sum(),
        **gate_metrics,
    }
    return score, ~equal, metrics


def _last_token(mask: Tensor) -> Tensor:
    """(B, R) bool, True at the last masked token of each row (nowhere for an empty row)."""
    positions = torch.arange(1, mask.shape[-1] + 1, device=mask.device)
    last = (mask.long() * positions).argmax(dim=-1, keepdim=True)  # [B, 1]
    return torch.zeros_like(mask).scatter(-1, last, True) & mask


def _next_masked(values: Tensor, mask: Tensor) -> Tensor:
    """Value at the next masked token after t, 0 after a row's last one. Shape (B, R)."""
    b, r = mask.shape
    positions = torch.arange(r, device=mask.device).expand(b, r)
    masked_at = torch.where(mask, positions, r)  # [B, R]; r means "none"
    first_from = masked_at.flip(-1).cummin(dim=-1).values.flip(-1)  # first masked >= t
    after = torch.cat([first_from[:, 1:], torch.full_like(first_from[:, :1], r)], dim=-1)
    padded = torch.cat([values, torch.zeros_like(values[:, :1])], dim=-1)  # [B, R + 1]
    return padded.gather(-1, after)


def _discounted_sum(x: Tensor, mask: Tensor, factor: float) -> Tensor:
    """y_t = sum_{s >= t, masked} factor^(k_s - k_t) x_s, k counting masked tokens only.

    Shape: x, mask (B, R). 0 where ``mask`` is 0.
    """
    x = torch.where(mask, x, torch.zeros_like(x))
    if factor == 1.0:
        return torch.where(mask, x.flip(-1).cumsum(-1).flip(-1), torch.zeros_like(x))
    carry = torch.zeros_like(x[:, 0])
    columns = []
    for t in reversed(range(x.shape[-1])):
        carry = torch.where(mask[:, t], x[:, t] + factor * carry, carry)
        columns.append(carry)
    return torch.where(mask, torch.stack(columns[::-1], dim=-1), torch.zeros_like(x))


def _token_rewards(inputs: AdvantageInputs, params: AdvantageParams, mask: Tensor) -> Tensor:
    """r_i on the last masked token (or ``inputs.token_rewards``: turn-level credit) minus
    beta * k_t on every masked token. Shape (B, R)."""
    rewards = _as_float(inputs.rewards)
    if inputs.token_rewards is not None:
        token_rewards = torch.where(mask, inputs.token_rewards.to(rewards.dtype), 0.0)
    else:
        token_rewards = torch.where(_last_token(mask), rewards.unsqueeze(-1), 0.0)
    if params.kl_coef > 0:
        kl = _require("KL-in-reward (kl_coef > 0)", "kl", inputs.kl).to(rewards.dtype)
        token_rewards = token_rewards + kl_in_reward(kl, mask, params.kl_coef)
    return token_rewards


def _output(
    advantages: Tensor, returns: Tensor, mask: Tensor, extra: Mapping[str, Tensor]
) -> AdvantageOutput:
    """Packs results with token metrics over the local batch (mask (B, R) is non-empty)."""
    advantages = torch.where(mask, advantages, 0.0)  # +0.0 on padding, never -0.0
    mean = masked_mean(advantages, mask)
    std = masked_mean((advantages - mean) ** 2, mask).sqrt()
    inf = torch.tensor(float("inf"), dtype=advantages.dtype, device=advantages.device)
    metrics = {
        "advantages/mean": mean,
        "advantages/std": std,
        "advantages/min": torch.where(mask, advantages, inf).min(),
        "advantages/max": torch.where(mask, advantages, -inf).max(),
        "returns/mean": masked_mean(returns, mask),
        **extra,
    }
    detached = {key: value.detach() for key, value in metrics.items()}
    return AdvantageOutput(advantages, returns, MappingProxyType(detached))


def _outcome_output(score: Tensor, mask: Tensor, extra: Mapping[str, Tensor]) -> AdvantageOutput:
    advantages = _per_token(score, mask)
    return _output(advantages, advantages, mask, extra)


def _grpo(inputs: AdvantageInputs, params: AdvantageParams, r_: AllReduceSum) -> AdvantageOutput:
    """(r_i - mean_group r) / (std_group r + eps), std Bessel-corrected.

    DeepSeekMath, arXiv:2402.03300, sec. 4.1.2 (outcome supervision). Shape: (B,) -> (B, R).
    """
    score, _, metrics = _group_scores(
        inputs, lambda r, g: (r - g.mean) / (g.std + params.eps), alike=(params, r_)
    )
    return _outcome_output(score, inputs.response_mask.bool(), metrics)


def _dr_grpo(inputs: AdvantageInputs, p: AdvantageParams, r_: AllReduceSum) -> AdvantageOutput:
    """r_i - mean_group r (no std division). Dr. GRPO, arXiv:2503.20783, sec. 3.2."""
    score, _, metrics = _group_scores(inputs, lambda r, g: r - g.mean, alike=(p, r_))
    return _outcome_output(score, inputs.response_mask.bool(), metrics)


def _rloo(inputs: AdvantageInputs, p: AdvantageParams, r_: AllReduceSum) -> AdvantageOutput:
    """r_i - mean_{j != i} r_j = G / (G - 1) (r_i - mean_group r). arXiv:2402.14740, sec. 3."""
    score, _, metrics = _group_scores(
        inputs,
        lambda r, g: g.size / (g.size - 1).clamp(min=1) * (r - g.mean),
        alike=(p, r_),
    )
    return _outcome_output(score, inputs.response_mask.bool(), metrics)


def _opo(inputs: AdvantageInputs, p: AdvantageParams, r_: AllReduceSum) -> AdvantageOutput:
    """r_i - b, b = sum_j |y_j| r_j / sum_j |y_j| over the group (length-weighted mean).

    OPO, "On-Policy RL with Optimal Reward Baseline", arXiv:2505.23585, sec. 3.
    """
    lengths = inputs.response_mask.to(_as_float(inputs.rewards).dtype).sum(dim=-1)  # [B]
    score, _, metrics = _group_scores(
        inputs, lambda r, g: r - g.mean, weights=lengths, alike=(p, r_)
    )
    return _outcome_output(score, inputs.response_mask.bool(), metrics)


def _reinforce_pp_baseline(
    inputs: AdvantageInputs, params: AdvantageParams, all_reduce_sum: AllReduceSum
) -> AdvantageOutput:
    """r_i - mean_group r broadcast over tokens, then masked whitening over the global batch.

    REINFORCE++-baseline, arXiv:2501.03262. Samples without a baseline (singleton or
    all-equal group) stay exactly 0 after whitening. Shape: (B,) -> (B, R).
    """
    mask = inputs.response_mask.bool()
    score, informative, metrics = _group_scores(inputs, lambda r, g: r - g.mean)
    whitened = masked_whiten(
        _per_token(score, mask), mask, eps=params.whiten_eps, all_reduce_sum=all_reduce_sum
    )
    advantages = torch.where(informative.unsqueeze(-1), whitened, 0.0)
    return _output(advantages, advantages, mask, metrics)


def _remax(inputs: AdvantageInputs, _p: AdvantageParams, _r: AllReduceSum) -> AdvantageOutput:
    """r_i - r_greedy(x_i), the greedy rollout's reward as baseline. ReMax, arXiv:2310.10505."""
    rewards = _as_float(inputs.rewards)
    baseline = _require("remax", "baseline_rewards", inputs.baseline_rewards)
    score = rewards - baseline.to(rewards.dtype)
    return _outcome_output(score, inputs.response_mask.bool(), {})


def _reinforce_pp(
    inputs: AdvantageInputs, params: AdvantageParams, all_reduce_sum: AllReduceSum
) -> AdvantageOutput:
    """Token rewards r_i (last token) - beta k_t; R_t = sum_{s>=t} gamma^(s-t) r_s; A = whiten(R).

    REINFORCE++, arXiv:2501.03262 (KL in the reward, global-batch normalization).
    Shape: (B, R).
    """
    mask = inputs.response_mask.bool()
    returns = _discounted_sum(_token_rewards(inputs, params, mask), mask, params.gamma)
    advantages = masked_whiten(returns, mask, eps=params.whiten_eps, all_reduce_sum=all_reduce_sum)
    return _output(advantages, returns, mask, {})


def _gae(
    inputs: AdvantageInputs, params: AdvantageParams, all_reduce_sum: AllReduceSum
) -> AdvantageOutput:
    """delta_t = r_t + gamma V_{t+1} - V_t; A_t = sum_l (gamma lambda)^l delta_{t+l}.

    GAE, Schulman et al., arXiv:1506.02438, eq. 16. Token rewards as ``reinforce_pp``;
    V after the last token is 0; returns = A + V; advantages whitened over the global
    batch. Shape: (B, R).
    """
    mask = inputs.response_mask.bool()
    token_rewards = _token_rewards(inputs, params, mask)
    critic = _require("gae", "values", inputs.values)
    values = torch.where(mask, critic.to(token_rewards.dtype), 0.0)
    deltas = token_rewards + params.gamma * _next_masked(values, mask) - values
    raw = _discounted_sum(deltas, mask, params.gamma * params.lam)
    returns = torch.where(mask, raw + values, 0.0)
    advantages = masked_whiten(raw, mask, eps=params.whiten_eps, all_reduce_sum=all_reduce_sum)
    return _output(advantages, returns, mask, {})


def _opd(inputs: AdvantageInputs, params: AdvantageParams, _r: AllReduceSum) -> AdvantageOutput:
    """alpha * sum_k w_k (log pi_k - log pi_student) + (1 - alpha) * A_grpo, per token.

    On-policy distillation (:mod:`lightrft.domain.distillation`), mixed with the task
    reward's GRPO advantage when ``opd_weight`` (alpha) < 1; alpha = 1 ignores the rewards
    and the groups. Shape: (B, R).
    """
    mask = inputs.response_mask.bool()
    student = _as_float(_require("opd", "logprobs", inputs.logprobs))
    teachers = _require("opd", "teacher_logprobs", inputs.teacher_logprobs)
    distill = teacher_advantages(teachers, params.teacher_weights, student, mask)
    alpha = params.opd_weight
    metrics: dict[str, Tensor] = {"distill/reverse_kl": masked_mean(-distill, mask)}
    advantages = distill
    if alpha < 1.0:
        score, _, group_metrics = _group_scores(
            inputs, lambda r, g: (r - g.mean) / (g.std + params.eps)
        )
        advantages = alpha * distill + (1.0 - alpha) * _per_token(score.to(distill.dtype), mask)
        metrics.update(group_metrics)
    return _output(advantages, advantages, mask, metrics)


def register_advantage_estimator(
    name: str,
    *,
    aliases: tuple[str, ...] = (),
    kl_in_reward: bool = False,
    needs_values: bool = False,
    needs_baseline_rewards: bool = False,
    uses_groups: bool = True,
    needs_teachers: bool = False,
    turn_credit: bool = False,
    needs_step_rewards: bool = False,
    alike_groups: bool = False,
) -> Callable[[Compute], Compute]:
    """Decorator: registers ``compute`` as the advantage estimator ``name`` (and its
    ``aliases``) with the capability flags of :class:`AdvantageEstimator`; a config selects it
    as ``algorithm.advantage_estimator: name``. A plugin module registers its own estimator
    this way (docs/extending.md); a name already registered is refused."""

    def add(compute: Compute) -> Compute:
        estimator = AdvantageEstimator(
            name,
            compute,
            kl_in_reward=kl_in_reward,
            needs_values=needs_values,
            needs_baseline_rewards=needs_baseline_rewards,
            uses_groups=uses_groups,
            needs_teachers=needs_teachers,
            turn_credit=turn_credit,
            needs_step_rewards=needs_step_rewards,
            alike_groups=alike_groups,
        )
        ADVANTAGE_ESTIMATORS.add(name, estimator, aliases=aliases)
        return compute

    return add


register_advantage_estimator("grpo", aliases=("group_norm",), turn_credit=True, alike_groups=True)(
    _grpo
)
register_advantage_estimator("dr_grpo", turn_credit=True, alike_groups=True)(_dr_grpo)
register_advantage_estimator("rloo", turn_credit=True, alike_groups=True)(_rloo)
register_advantage_estimator("opo", turn_credit=True, alike_groups=True)(_opo)
# CPGD, arXiv:2505.12504: its change is the loss
register_advantage_estimator("cpgd", turn_credit=True, alike_groups=True)(_grpo)
register_advantage_estimator(  # OpenRLHF's name: reinforce_baseline
    "reinforce_pp_baseline", aliases=("reinforce_baseline",), turn_credit=True
)(_reinforce_pp_baseline)
register_advantage_estimator("remax", needs_baseline_rewards=True, uses_groups=False)(_remax)
register_advantage_estimator(  # OpenRLHF's name: reinforce
    "reinforce_pp", aliases=("reinforce",), kl_in_reward=True, uses_groups=False, turn_credit=True
)(_reinforce_pp)
register_advantage_estimator(
    "gae", kl_in_reward=True, needs_values=True, uses_groups=False, turn_credit=True
)(_gae)
register_advantage_estimator("opd", uses_groups=False, needs_teachers=True)(_opd)


def validate_advantage_inputs(
    estimator: AdvantageEstimator, inputs: AdvantageInputs, params: AdvantageParams
) -> None:
    """Raises ValueError/TypeError naming the field when ``inputs`` do not fit ``estimator``.

    Shapes: rewards, group_index, baseline_rewards (B,); response_mask, values, kl (B, R).
    Rewards must be finite; values and kl must be finite where the mask counts.
    """
    check_shape("rewards", inputs.rewards, (None,))
    b = inputs.rewards.shape[0]
    check_shape("response_mask", inputs.response_mask, (b, None))
    check_mask("response_mask", inputs.response_mask)
    check_shape("group_index", inputs.group_index, (b,))
    index_dtype = inputs.group_index.dtype
    if estimator.uses_groups and (index_dtype.is_floating_point or index_dtype.is_complex):
        raise TypeError(f"group_index must hold integer ids, got dtype {index_dtype}")
    check_finite("rewards", inputs.rewards)
    mask = inputs.response_mask.bool()
    gated = (
        estimator.alike_groups
        and params.alike_group_advantage > 0
        and params.alike_group_max_entropy is not None
    )
    optional = (  # field, tensor, shape, required, where it must be finite
        ("values", inputs.values, mask.shape, estimator.needs_values, mask),
        ("kl", inputs.kl, mask.shape, estimator.kl_in_reward and params.kl_coef > 0, mask),
        ("baseline_rewards", inputs.baseline_rewards, (b,), estimator.needs_baseline_rewards, None),
        ("logprobs", inputs.logprobs, mask.shape, estimator.needs_teachers, mask),
        (
            "teacher_logprobs",
            inputs.teacher_logprobs,
            (len(params.teacher_weights), *mask.shape),
            estimator.needs_teachers,
            mask,
        ),
        ("step_rewards", inputs.step_rewards, mask.shape, estimator.needs_step_rewards, mask),
        ("step_mask", inputs.step_mask, mask.shape, estimator.needs_step_rewards, None),
        (  # read (so checked) only by the entropy gate
            "sampled_logprobs",
            inputs.sampled_logprobs if gated else None,
            mask.shape,
            gated,
            mask,
        ),
    )
    for field, tensor, shape, required, counted in optional:
        if tensor is None:
            if required:
                _require(estimator.name, field, None)
            continue
        check_shape(field, tensor, tuple(shape))
        check_finite(field, tensor if counted is None else torch.where(counted, tensor, 0.0))
    if inputs.token_rewards is not None:
        _validate_token_rewards(estimator, inputs.token_rewards, inputs.rewards, mask)


def _validate_token_rewards(
    estimator: AdvantageEstimator, token_rewards: Tensor, rewards: Tensor, mask: Tensor
) -> None:
    """token_rewards (B, R): a ``turn_credit`` estimator, finite, 0 off the mask, rows
    summing to ``rewards`` (B,)."""
    if not estimator.turn_credit:
        raise ValueError(
            f"advantage estimator {estimator.name!r} does not take token_rewards "
            "(turn-level credit); use one of: "
            + ", ".join(
                n for n in ADVANTAGE_ESTIMATORS.names() if ADVANTAGE_ESTIMATORS.get(n).turn_credit
            )
        )
    check_shape("token_rewards", token_rewards, tuple(mask.shape))
    check_finite("token_rewards", token_rewards)
    if bool((token_rewards[~mask] != 0).any()):
        raise ValueError("token_rewards must be 0 where response_mask is 0")
    total = _as_float(token_rewards).sum(dim=-1)
    expected = _as_float(rewards).to(total.dtype)
    if not torch.allclose(total, expected, rtol=1e-5, atol=1e-5):
        row = int((total - expected).abs().argmax())
        raise ValueError(
            f"token_rewards row {row} sums to {float(total[row])}, its reward is "
            f"{float(expected[row])}: a row's token rewards must sum to its reward"
        )


def compute_advantages(
    name: str,
    inputs: AdvantageInputs,
    params: AdvantageParams = AdvantageParams(),
    all_reduce_sum: AllReduceSum = local_sum,
) -> AdvantageOutput:
    """Validates ``inputs`` for estimator ``name`` (ALGORITHMS.md table), then computes.

    Shapes: rewards, group_index, baseline_rewards (B,); response_mask, values, kl and the
    outputs (B, R). ``all_reduce_sum`` sums whitening statistics over data-parallel ranks
    (every rank must call this with the same ``name``). Runs without autograd.
    """
    estimator = ADVANTAGE_ESTIMATORS.get(name)
    validate_advantage_inputs(estimator, inputs, params)
    with torch.no_grad():
        return estimator.compute(inputs, params, all_reduce_sum)
