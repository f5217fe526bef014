"""Rollout/training mismatch: how far the engine's log-probs are from the trainer's, and
importance weights that correct for it.

Shapes: B samples, R response tokens; every tensor is (B, R) and ``response_mask`` is 1/True
where a token counts (padding never influences a result, whatever it holds).

Notation: mu the engine's (rollout) distribution the tokens were drawn from, pi_old the
trainer's distribution for the same weights, d_t = log pi_old(y_t) - log mu(y_t) (clamped to
[-20, 20]), rho_t = exp(d_t) the token importance ratio, and rho_i = exp(sum_t d_t) the
sequence ratio (the product of its token ratios).

Metrics (means over the masked tokens of the batch):
- ``rollout/logp_diff_mean``, ``rollout/logp_diff_max``: mean and max of |d_t|;
- ``rollout/kl_k3``: mean of rho_t - 1 - d_t, the k3 estimate (Schulman, "Approximating KL
  divergence", 2020) of KL(mu || pi_old) from samples of mu;
- ``rollout/is_ratio_min``, ``_mean``, ``_max``: of rho_t.

Correction modes (the per-token loss is multiplied by the weight w, detached):
- ``token_truncate`` (TIS, Yao et al. 2025): w_t = min(rho_t, C);
- ``token_mask``: w_t = rho_t if rho_t <= C, else 0 (the token is dropped);
- ``sequence_truncate``: w_t = min(rho_i, C) for every token of sequence i;
- ``sequence_mask`` (MIS, masked importance sampling): w_t = rho_i if rho_i <= C, else 0
  (the whole sequence is dropped).
Names as in TRL's ``vllm_importance_sampling_mode``. Default: ``token_truncate`` with C = 2
(the cap verl recommends for TIS; TRL's default is ``sequence_mask`` with C = 3).
"""

from __future__ import annotations

import torch
from torch import Tensor

from lightrft.domain.checks import check_mask, check_same_shape, check_shape
from lightrft.domain.correction_modes import CORRECTION_MODES as CORRECTION_MODES
from lightrft.domain.correction_modes import DEFAULT_CORRECTION_CAP as DEFAULT_CORRECTION_CAP
from lightrft.domain.correction_modes import DEFAULT_CORRECTION_MODE as DEFAULT_CORRECTION_MODE
from lightrft.domain.correction_modes import CorrectionMode as CorrectionMode
from lightrft.domain.correction_modes import RolloutCorrection as RolloutCorrection

LOG_RATIO_BOUND = 20.0


def _checked(trainer: Tensor, rollout: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """(d, mask as bool): the clamped log-ratio with padding zeroed. Shape (B, R) each."""
    check_shape("trainer_logprobs", trainer, (None, None))
    check_same_shape("trainer_logprobs", trainer, rollout_logprobs=rollout, response_mask=mask)
    check_mask("response_mask", mask)
    keep = mask.bool()
    diff = trainer.detach() - rollout.detach()
    diff = torch.where(keep, diff, torch.zeros_like(diff))
    return diff.clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND), keep


def mismatch_metrics(
    trainer_logprobs: Tensor, rollout_logprobs: Tensor, response_mask: Tensor
) -> dict[str, Tensor]:
    """The ``rollout/*`` metrics of the module docstring, detached float64 0-dim tensors."""
    diff, keep = _checked(trainer_logprobs, rollout_logprobs, response_mask)
    d = diff[keep].double()  # [N] masked tokens
    ratio = d.exp()
    return {
        "rollout/logp_diff_mean": d.abs().mean(),
        "rollout/logp_diff_max": d.abs().max(),
        "rollout/kl_k3": (ratio - 1 - d).mean(),
        "rollout/is_ratio_min": ratio.min(),
        "rollout/is_ratio_mean": ratio.mean(),
        "rollout/is_ratio_max": ratio.max(),
    }


def correction_weights(
    trainer_logprobs: Tensor,
    rollout_logprobs: Tensor,
    response_mask: Tensor,
    correction: RolloutCorrection,
) -> Tensor:
    """Importance weights (B, R) of ``correction.mode``, detached, 0 on padding."""
    diff, keep = _checked(trainer_logprobs, rollout_logprobs, response_mask)
    if correction.mode.startswith("token"):
        ratio = diff.exp()  # [B, R]
    else:
        sequence = diff.sum(-1, keepdim=True).clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
        ratio = sequence.exp().expand_as(diff)  # [B, R] rho_i on every token of row i
    if correction.mode.endswith("truncate"):
        weights = ratio.clamp(max=correction.cap)
    else:
        weights = torch.where(ratio <= correction.cap, ratio, torch.zeros_like(ratio))
    return torch.where(keep, weights, torch.zeros_like(weights))
