"""Every parameter object of the training cycle in one place (torch-free; the cycle is
:mod:`lightrft.application.cycle`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lightrft.application.off_policy_params import OffPolicyParams
from lightrft.application.params import (
    AlgorithmParams,
    CycleParams,
    HealthParams,
    RewardShapingParams,
    RolloutParams,
    TrainParams,
)
from lightrft.application.reward_failure_policy import RewardFailurePolicy


@dataclass(frozen=True)
class CycleSettings:
    """Every parameter object of the cycle in one place."""

    rollout: RolloutParams = field(default_factory=RolloutParams)
    algorithm: AlgorithmParams = field(default_factory=AlgorithmParams)
    shaping: RewardShapingParams = field(default_factory=RewardShapingParams)
    train: TrainParams = field(default_factory=TrainParams)
    cycle: CycleParams = field(default_factory=CycleParams)
    reward_failures: RewardFailurePolicy = field(default_factory=RewardFailurePolicy)
    health: HealthParams = field(default_factory=HealthParams)
    off_policy: OffPolicyParams = field(default_factory=OffPolicyParams)
