"""Policy-gradient losses, registered by name, with truncated importance sampling.

Shapes: B samples, R response tokens. Every tensor is (B, R); ``response_mask`` is 1/True where
a token counts, and padding (mask 0) never influences a loss, a gradient or a metric, whatever
value it holds (even NaN or inf). Per-token losses l (B, R) are reduced by one of the
aggregation modes of :mod:`lightrft.domain.aggregation` with a global :class:`LossNormalizer`.

Notation: rho = exp(logp - logp_old) (log-ratio clamped to [-20, 20] before ``exp``), A the
advantage, sg[.] stop-gradient. Formulas: ALGORITHMS.md, "Policy losses".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
from torch import Tensor

from lightrft.domain import algorithm_registries
from lightrft.domain.aggregation import LossNormalizer, aggregate
from lightrft.domain.checks import (
    check_finite,
    check_mask,
    check_positive,
    check_same_shape,
    check_shape,
)
from lightrft.domain.masked import masked_mean
from lightrft.domain.policy_loss_params import PolicyLossParams as PolicyLossParams
from lightrft.domain.registry import Registry
from lightrft.domain.rollout_correction import (
    RolloutCorrection,
    correction_weights,
)

LOG_RATIO_BOUND = 20.0
"""Log-ratios are clamped to [-LOG_RATIO_BOUND, LOG_RATIO_BOUND] before ``exp``."""
CPGD_DRIFT_WEIGHT_CAP = 2.0
"""Cap on the CPGD drift gradient weight rho - 1 (as in the authors' siiRL implementation)."""

Metrics = Mapping[str, Tensor]


@dataclass(frozen=True)
class PolicyLossInputs:
    """Response-aligned tensors of one micro-batch, each of shape (B, R).

    ``logprobs`` carries the gradient; ``old_logprobs`` come from the policy that produced the
    batch (recomputed by the trainer); ``rollout_logprobs`` from the inference engine (only
    needed for truncated importance sampling).
    """

    logprobs: Tensor
    old_logprobs: Tensor
    advantages: Tensor
    response_mask: Tensor
    rollout_logprobs: Tensor | None = None


@dataclass(frozen=True)
class PolicyLossOutput:
    """``loss``: 0-dim, aggregated with the global normalizer. ``metrics``: detached local
    (micro-batch) means over masked tokens, keyed ``policy/...``."""

    loss: Tensor
    metrics: Metrics


PerTokenLoss = Callable[[PolicyLossInputs, PolicyLossParams], tuple[Tensor, Metrics]]


@dataclass(frozen=True)
class PolicyLoss:
    """A registered loss: ``per_token`` maps inputs whose padding is zeroed to a (B, R) loss
    (sequence losses broadcast over their tokens) and metrics; ``defaults`` are the paper's;
    ``supports_dual_clip``: whether it honours ``PolicyLossParams.dual_clip``;
    ``sequence_level``: one ratio per sequence (GSPO, GMPO), whose papers average over
    sequences, so a token-mean aggregation (which weights sequences by length) is refused;
    ``zero_without_advantage``: every term of the loss is a multiple of the advantage, so a
    sample whose advantages are all zero has zero loss and gradient (not CPGD: its drift
    penalty does not carry the advantage)."""

    name: str
    per_token: PerTokenLoss
    defaults: PolicyLossParams
    supports_dual_clip: bool = False
    sequence_level: bool = False
    zero_without_advantage: bool = True


POLICY_LOSSES: Registry[PolicyLoss] = algorithm_registries.POLICY_LOSSES


def _fraction(flag: Tensor, mask: Tensor) -> Tensor:
    """Detached share of masked tokens where ``flag`` holds. Shape: flag, mask (B, R)."""
    return masked_mean(flag.float(), mask).detach()


def _log_ratio(inputs: PolicyLossInputs) -> Tensor:
    """log(pi / pi_old) clamped to [-20, 20]. Shape: (B, R)."""
    return (inputs.logprobs - inputs.old_logprobs).clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)


def _sequence_log_ratio(inputs: PolicyLossInputs) -> Tensor:
    """(1/|y_i|) sum_t m (logp - logp_old), clamped; GSPO Eq. (7). Shape: (B, 1)."""
    diff = inputs.logprobs - inputs.old_logprobs
    mean = masked_mean(diff, inputs.response_mask, dim=-1)  # [B]
    return mean.clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND).unsqueeze(-1)  # [B, 1]


def _clipped_surrogate(
    ratio: Tensor, inputs: PolicyLossInputs, params: PolicyLossParams
) -> tuple[Tensor, Metrics]:
    """-min(rho A, clip(rho, 1-eps_low, 1+eps_high) A), then for A < 0 min(l, -c A) if dual clip.

    Shape: ratio (B, R), advantages (B, R). PPO, arXiv:1707.06347 Eq. (7); dual-clip PPO,
    arXiv:1912.09729.
    """
    adv, mask = inputs.advantages, inputs.response_mask
    unclipped = -adv * ratio
    clipped = -adv * ratio.clamp(1 - params.clip_eps_low, 1 + params.clip_eps_high)
    loss = torch.maximum(unclipped, clipped)
    metrics = {"policy/clip_fraction": _fraction(clipped > unclipped, mask)}
    if params.dual_clip is not None:
        bound = -adv * params.dual_clip
        dual = (adv < 0) & (loss > bound)
        loss = torch.where(dual, bound, loss)
        metrics["policy/dual_clip_fraction"] = _fraction(dual, mask)
    return loss, metrics


def ppo_per_token(inputs: PolicyLossInputs, params: PolicyLossParams) -> tuple[Tensor, Metrics]:
    """PPO clipped surrogate with clip-higher and optional dual clip (token ratio rho).

    Shape: (B, R) -> (B, R). arXiv:1707.06347 Eq. (7); clip-higher from DAPO, arXiv:2503.14476.
    """
    return _clipped_surrogate(_log_ratio(inputs).exp(), inputs, params)


def gspo_per_token(inputs: PolicyLossInputs, params: PolicyLossParams) -> tuple[Tensor, Metrics]:
    """GSPO: sequence ratio s_i = exp(mean_t log rho), l_i = -min(s_i A, clip(s_i) A).

    Shape: (B, R) -> (B, R), l_i broadcast over tokens. GSPO objective, arXiv:2507.18071.
    """
    ratio = _sequence_log_ratio(inputs).exp().expand_as(inputs.logprobs)
    loss, metrics = _clipped_surrogate(ratio, inputs, params)
    return loss, {**metrics, "policy/seq_ratio_mean": masked_mean(ratio, inputs.response_mask)}


def gspo_token_per_token(
    inputs: PolicyLossInputs, params: PolicyLossParams
) -> tuple[Tensor, Metrics]:
    """GSPO-token: s_{i,t} = sg[s_i] * exp(logp_t - sg[logp_t]) in the clipped surrogate.

    Same value as GSPO, per-token gradient s_i A_t grad logp_t. Shape: (B, R) -> (B, R).
    GSPO-token objective, arXiv:2507.18071.
    """
    logp = inputs.logprobs
    log_ratio = _sequence_log_ratio(inputs).detach() + (logp - logp.detach())  # [B, R]
    ratio = log_ratio.exp()
    loss, metrics = _clipped_surrogate(ratio, inputs, params)
    return loss, {**metrics, "policy/seq_ratio_mean": masked_mean(ratio, inputs.response_mask)}


def gmpo_per_token(inputs: PolicyLossInputs, params: PolicyLossParams) -> tuple[Tensor, Metrics]:
    """GMPO: geometric mean of token ratios clipped in log space on the side sign(A) favours.

    d'_t = sign(A) min(sign(A) d_t, sign(A) clip(d_t, -eps_low, eps_high)), d_t = log rho_t;
    l_i = -A_i exp(mean_t d'_t), A_i the masked mean advantage of the response, broadcast over
    its tokens. Shape: (B, R) -> (B, R). GMPO objective, arXiv:2507.20673.
    """
    adv, mask = inputs.advantages, inputs.response_mask
    log_ratio = _log_ratio(inputs)
    sign = adv.sign()
    clipped = log_ratio.clamp(-params.clip_eps_low, params.clip_eps_high)
    kept = sign * torch.minimum(sign * log_ratio, sign * clipped)
    seq_ratio = masked_mean(kept, mask, dim=-1).exp()  # [B]
    seq_adv = masked_mean(adv, mask, dim=-1)  # [B]
    loss = (-seq_adv * seq_ratio).unsqueeze(-1).expand_as(adv)  # [B, R]
    seq_mask = mask.sum(dim=-1) > 0
    return loss, {
        "policy/clip_fraction": _fraction(sign * clipped < sign * log_ratio, mask),
        "policy/seq_ratio_mean": masked_mean(seq_ratio, seq_mask),
    }


def cpgd_per_token(inputs: PolicyLossInputs, params: PolicyLossParams) -> tuple[Tensor, Metrics]:
    """CPGD: clipped log-ratio policy gradient plus a policy-drift penalty.

    pg_t = -A min(d_t, log(1+eps_high)) for A >= 0 and -A max(d_t, log(1-eps_low)) for A < 0,
    d_t = logp - logp_old. Drift: value k3 = rho - 1 - log rho (an estimate of
    KL(pi_old || pi)), gradient min(rho - 1, 2) grad logp (the k3 gradient, weight capped as in
    the authors' code). l_t = pg_t + drift_coef * drift_t. Shape: (B, R) -> (B, R).
    arXiv:2505.12504 (CPGD objective: clipped log-ratio term minus alpha * policy drift).
    """
    adv, logp = inputs.advantages, inputs.logprobs
    log_ratio = _log_ratio(inputs)
    upper, lower = math.log1p(params.clip_eps_high), math.log1p(-params.clip_eps_low)
    positive = adv >= 0
    clipped = torch.where(positive, log_ratio.clamp(max=upper), log_ratio.clamp(min=lower))
    ratio = log_ratio.detach().exp()
    k3 = ratio - 1 - log_ratio.detach()
    weight = (ratio - 1).clamp(max=CPGD_DRIFT_WEIGHT_CAP)
    drift = k3 + weight * (logp - logp.detach())
    loss = -adv * clipped + params.drift_coef * drift
    active = torch.where(positive, log_ratio > upper, log_ratio < lower)
    return loss, {
        "policy/clip_fraction": _fraction(active, inputs.response_mask),
        "policy/drift": masked_mean(k3, inputs.response_mask),
    }


def reinforce_per_token(
    inputs: PolicyLossInputs, params: PolicyLossParams
) -> tuple[Tensor, Metrics]:
    """REINFORCE: -A logp (on-policy, no ratio, no clip). Shape: (B, R) -> (B, R).

    Williams (1992); as revisited for LLMs in arXiv:2402.14740.
    """
    mask = inputs.response_mask
    return -inputs.advantages * inputs.logprobs, {
        "policy/clip_fraction": _fraction(torch.zeros_like(mask, dtype=torch.bool), mask)
    }


def register_policy_loss(
    name: str,
    *,
    defaults: PolicyLossParams = PolicyLossParams(),
    supports_dual_clip: bool = False,
    sequence_level: bool = False,
    zero_without_advantage: bool = True,
) -> Callable[[PerTokenLoss], PerTokenLoss]:
    """Decorator: registers ``per_token`` as the policy loss ``name`` with its recommended
    ``defaults`` and the capability flags of :class:`PolicyLoss`; a config selects it as
    ``algorithm.policy_loss: name``. A plugin module registers its own loss this way
    (docs/extending.md); a name already registered is refused."""

    def add(per_token: PerTokenLoss) -> PerTokenLoss:
        loss = PolicyLoss(
            name,
            per_token,
            defaults,
            supports_dual_clip=supports_dual_clip,
            sequence_level=sequence_level,
            zero_without_advantage=zero_without_advantage,
        )
        POLICY_LOSSES.add(name, loss)
        return per_token

    return add


_GSPO = PolicyLossParams(clip_eps_low=3e-4, clip_eps_high=4e-4, agg="seq-mean-token-mean")
_GMPO = PolicyLossParams(clip_eps_low=0.4, clip_eps_high=0.4, agg="seq-mean-token-mean")
register_policy_loss("ppo", supports_dual_clip=True)(ppo_per_token)
register_policy_loss("dapo", defaults=PolicyLossParams(0.2, 0.28), supports_dual_clip=True)(
    ppo_per_token
)
register_policy_loss("gspo", defaults=_GSPO, supports_dual_clip=True, sequence_level=True)(
    gspo_per_token
)
register_policy_loss("gspo_token", defaults=_GSPO, supports_dual_clip=True, sequence_level=True)(
    gspo_token_per_token
)
register_policy_loss("gmpo", defaults=_GMPO, sequence_level=True)(gmpo_per_token)
register_policy_loss(
    "cpgd", defaults=PolicyLossParams(drift_coef=0.001), zero_without_advantage=False
)(cpgd_per_token)
register_policy_loss("reinforce")(reinforce_per_token)


def _masked_input(name: str, tensor: Tensor, mask: Tensor) -> Tensor:
    """``tensor`` with padding set to 0 (gradient 0 there); refuses non-finite masked values."""
    kept = torch.where(mask, tensor, torch.zeros_like(tensor))
    check_finite(name, kept.detach())
    return kept


def _validated(inputs: PolicyLossInputs) -> PolicyLossInputs:
    """Checks shapes, mask and finiteness; returns inputs with padding zeroed, mask as bool."""
    check_shape("logprobs", inputs.logprobs, (None, None))
    check_same_shape(
        "logprobs",
        inputs.logprobs,
        old_logprobs=inputs.old_logprobs,
        advantages=inputs.advantages,
        response_mask=inputs.response_mask,
        rollout_logprobs=inputs.rollout_logprobs,
    )
    check_mask("response_mask", inputs.response_mask)
    mask = inputs.response_mask.bool()
    rollout = inputs.rollout_logprobs
    if rollout is not None:
        rollout = _masked_input("rollout_logprobs", rollout, mask)
    return PolicyLossInputs(
        logprobs=_masked_input("logprobs", inputs.logprobs, mask),
        old_logprobs=_masked_input("old_logprobs", inputs.old_logprobs, mask),
        advantages=_masked_input("advantages", inputs.advantages, mask),
        response_mask=mask,
        rollout_logprobs=rollout,
    )


def truncated_is_weights(
    old_logprobs: Tensor, rollout_logprobs: Tensor, response_mask: Tensor, cap: float
) -> Tensor:
    """w = min(exp(logp_old - logp_rollout), C), detached, 0 on padding. Shape: (B, R) each.

    Truncated importance sampling for the rollout/train mismatch (Yao et al. 2025, "Your
    efficient RL framework secretly brings you off-policy RL training"; truncated weights as
    in V-trace, arXiv:1802.01561).
    """
    check_positive("cap", cap)
    check_shape("old_logprobs", old_logprobs, (None, None))
    check_same_shape(
        "old_logprobs", old_logprobs, rollout_logprobs=rollout_logprobs, response_mask=response_mask
    )
    check_mask("response_mask", response_mask)
    mask = response_mask.bool()
    old = _masked_input("old_logprobs", old_logprobs, mask)
    rollout = _masked_input("rollout_logprobs", rollout_logprobs, mask)
    return correction_weights(old, rollout, mask, RolloutCorrection("token_truncate", cap))


def compute_policy_loss(
    name: str,
    inputs: PolicyLossInputs,
    params: PolicyLossParams | None = None,
    normalizer: LossNormalizer | None = None,
) -> PolicyLossOutput:
    """Policy loss ``name`` on one micro-batch: per-token loss, optional TIS weights, aggregation.

    Shape: every input (B, R); the loss is 0-dim. ``params`` None uses the loss's paper defaults.
    With ``params.tis_cap`` set, l_t is multiplied by the rollout-correction weights of
    ``params.correction_mode`` (:func:`~lightrft.domain.rollout_correction.correction_weights`;
    needs ``inputs.rollout_logprobs``). ``normalizer`` None treats the micro-batch as the whole global
    batch. Metrics add ``policy/approx_kl`` (k3 = rho - 1 - log rho, KL(pi_old || pi)),
    ``policy/ratio_mean`` and, with TIS, ``policy/tis_weight_mean``. Papers: each loss's
    docstring; aggregation modes: DAPO arXiv:2503.14476, Dr. GRPO arXiv:2503.20783.
    """
    loss_def = POLICY_LOSSES.get(name)
    params = loss_def.defaults if params is None else params
    if params.dual_clip is not None and not loss_def.supports_dual_clip:
        users = ", ".join(n for n in POLICY_LOSSES if POLICY_LOSSES.get(n).supports_dual_clip)
        raise ValueError(f"dual_clip is not used by policy loss {name!r}; only by {users}")
    if params.tis_cap is not None and inputs.rollout_logprobs is None:
        raise ValueError(
            "tis_cap is set but inputs.rollout_logprobs is None; pass the inference "
            "engine's log-probs or set tis_cap=None"
        )
    clean = _validated(inputs)
    mask = clean.response_mask
    per_token, specific = loss_def.per_token(clean, params)
    log_ratio = _log_ratio(clean).detach()
    metrics = {
        **specific,
        "policy/approx_kl": masked_mean(log_ratio.exp() - 1 - log_ratio, mask),
        "policy/ratio_mean": masked_mean(log_ratio.exp(), mask),
    }
    if params.tis_cap is not None and clean.rollout_logprobs is not None:
        correction = RolloutCorrection(params.correction_mode, params.tis_cap)
        weights = correction_weights(clean.old_logprobs, clean.rollout_logprobs, mask, correction)
        per_token = per_token * weights
        metrics["policy/tis_weight_mean"] = masked_mean(weights, mask)
        metrics["policy/tis_dropped_fraction"] = _fraction(weights == 0, mask)
    loss = aggregate(per_token, mask, params.agg, normalizer)
    return PolicyLossOutput(loss=loss, metrics={k: v.detach() for k, v in metrics.items()})
