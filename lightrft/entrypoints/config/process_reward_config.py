"""Config model of the process-reward-model source (``reward.sources`` type ``process_rm``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from lightrft.domain.algorithm_registries import STEP_AGGREGATIONS
from lightrft.entrypoints.config.components import (
    REWARD_SOURCE_CONFIGS,
    RewardSourceSection,
    register_config,
)


@register_config(REWARD_SOURCE_CONFIGS, "process_rm")
class ProcessRmConfig(RewardSourceSection):
    """A process reward model directory (``lightrft rm train --kind process`` output): every
    reasoning step of a response scored at its last token, aggregated into one reward."""

    type: Literal["process_rm"] = "process_rm"
    path: str = Field(description="Process reward model directory.")
    aggregate: str = Field(
        "min",
        description="Step scores -> reward: min, last, product, mean (or steps: their sum, "
        "each step's score passed on as a step reward).",
    )
    empty_score: float = Field(0.0, description="Reward of a response without any step.")
    step_threshold: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Step scores at or above it count 1, below it 0 (null: the scores as they are).",
    )
    micro_batch_size: int = Field(8, gt=0, description="Rows per scoring forward.")
    dtype: Literal["fp32", "bf16", "fp16"] = Field("fp32", description="Weights dtype.")
    trust_remote_code: bool = Field(False, description="Run code shipped with the model.")

    @property
    def passes_step_rewards(self) -> bool:
        """``aggregate: steps``: each step's score is passed on as a step reward."""
        return self.aggregate == "steps"

    @field_validator("aggregate")
    @classmethod
    def _known_aggregate(cls, value: str) -> str:
        if value != "steps":
            STEP_AGGREGATIONS.get(value)  # names the choices when unknown
        return value
