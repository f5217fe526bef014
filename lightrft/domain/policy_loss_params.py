"""The parameters of the policy losses (torch-free; the losses are in
:mod:`lightrft.domain.policy_losses`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from lightrft.domain.agg_modes import AGG_MODES, AggMode
from lightrft.domain.correction_modes import (
    DEFAULT_CORRECTION_MODE,
    CorrectionMode,
    RolloutCorrection,
)
from lightrft.domain.scalar_checks import check_non_negative, check_positive


@dataclass(frozen=True)
class PolicyLossParams:
    """Clip range (eps_low in [0, 1), eps_high >= 0), optional dual clip c > 1 (ratio losses
    only), aggregation mode, optional rollout-correction cap C > 0 (``tis_cap``) with its
    ``correction_mode`` (:mod:`lightrft.domain.rollout_correction`; token-level truncation,
    TIS, by default), and the CPGD policy-drift coefficient (0.001, the value of the CPGD
    authors' scripts; only ``cpgd`` reads it)."""

    clip_eps_low: float = 0.2
    clip_eps_high: float = 0.2
    dual_clip: float | None = None
    agg: AggMode = "token-mean"
    tis_cap: float | None = None
    drift_coef: float = 0.001
    correction_mode: CorrectionMode = DEFAULT_CORRECTION_MODE

    def __post_init__(self) -> None:
        check_non_negative("clip_eps_low", self.clip_eps_low)
        if self.clip_eps_low >= 1:
            raise ValueError(f"clip_eps_low must be below 1, got {self.clip_eps_low}")
        check_non_negative("clip_eps_high", self.clip_eps_high)
        if self.dual_clip is not None and not (1 < self.dual_clip < math.inf):
            raise ValueError(f"dual_clip must be a finite number above 1, got {self.dual_clip}")
        if self.agg not in AGG_MODES:
            raise ValueError(f"unknown agg {self.agg!r}; valid choices: {', '.join(AGG_MODES)}")
        if self.tis_cap is not None:
            check_positive("tis_cap", self.tis_cap)
        RolloutCorrection(self.correction_mode)  # validates the mode name
        check_non_negative("drift_coef", self.drift_coef)
