"""The hyper-parameters of the advantage estimators (torch-free; the estimators are in
:mod:`lightrft.domain.advantages`)."""

from __future__ import annotations

from dataclasses import dataclass

from lightrft.domain.scalar_checks import check_non_negative, check_positive
from lightrft.domain.teacher_weights import check_teacher_weights


@dataclass(frozen=True)
class AdvantageParams:
    """Hyper-parameters shared by the estimators (each reads the ones it needs)."""

    eps: float = 1e-6  # group std epsilon (grpo, cpgd)
    gamma: float = 1.0  # discount (reinforce_pp, gae)
    lam: float = 0.95  # GAE lambda
    kl_coef: float = 0.0  # beta for KL in the reward (reinforce_pp, gae)
    whiten_eps: float = 1e-8  # masked whitening epsilon
    teacher_weights: tuple[float, ...] = (1.0,)  # opd: w_k per teacher, summing to 1
    opd_weight: float = 1.0  # opd: alpha, the distillation share; 1 - alpha: GRPO's
    process_weight: float = 1.0  # process_grpo: w, the weight of the per-step returns
    # groups whose rewards are all alike: this times the batch-standardised reward (grpo,
    # dr_grpo, rloo, opo, cpgd); 0: such a group gets advantage 0 (the estimators' own rule)
    alike_group_advantage: float = 0.0
    # ... only on a batch whose sampled entropy estimate (nats) / mean reward is below these
    alike_group_max_entropy: float | None = None
    alike_group_max_reward: float | None = None

    def __post_init__(self) -> None:
        check_non_negative("eps", self.eps)
        check_teacher_weights(self.teacher_weights)
        if not 0.0 <= self.opd_weight <= 1.0:
            raise ValueError(f"opd_weight must lie in [0, 1], got {self.opd_weight}")
        check_positive("whiten_eps", self.whiten_eps)
        check_non_negative("kl_coef", self.kl_coef)
        check_non_negative("process_weight", self.process_weight)
        check_non_negative("alike_group_advantage", self.alike_group_advantage)
        for name in ("alike_group_max_entropy", "alike_group_max_reward"):
            value = getattr(self, name)
            if value is not None:
                check_non_negative(name, value)
        for name, value in (("gamma", self.gamma), ("lam", self.lam)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {value}")
