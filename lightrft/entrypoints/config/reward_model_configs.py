"""Config models of the reward-model sources (``reward.sources``): scalar reward models."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lightrft.entrypoints.config.components import (
    REWARD_SOURCE_CONFIGS,
    RewardSourceSection,
    register_config,
)


@register_config(REWARD_SOURCE_CONFIGS, "scalar_rm")
class ScalarRmConfig(RewardSourceSection):
    """A scalar reward model directory (``lightrft rm train`` output, or any HF
    sequence-classification model with one label), awake only in the reward phases."""

    type: Literal["scalar_rm"] = "scalar_rm"
    path: str = Field(description="Reward model directory.")
    normalize: bool = Field(False, description="Use the normalization saved with the model.")
    micro_batch_size: int = Field(16, gt=0, description="Rows per scoring forward.")
    dtype: Literal["fp32", "bf16", "fp16"] = Field("fp32", description="Weights dtype.")
    trust_remote_code: bool = Field(False, description="Run code shipped with the model.")
