"""Config models of the built-in training strategies (``backend.strategy``)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from lightrft.entrypoints.config.components import (
    STRATEGY_CONFIGS,
    ComponentSection,
    register_config,
)


class StrategySection(ComponentSection):
    """Base of a strategy's config."""

    shards_parameters: ClassVar[bool] = False
    """Whether ranks hold parameter shards (then an engine cannot run the module in place)."""


@register_config(STRATEGY_CONFIGS, "single")
class SingleStrategyConfig(StrategySection):
    """One device, plain AdamW (also each rank of plain data parallelism)."""

    type: Literal["single"] = "single"


@register_config(STRATEGY_CONFIGS, "fsdp2")
class Fsdp2StrategyConfig(StrategySection):
    """PyTorch FSDP2 (``fully_shard``): parameters, gradients and optimizer state sharded."""

    shards_parameters: ClassVar[bool] = True
    type: Literal["fsdp2"] = "fsdp2"
    cpu_offload: bool = Field(False, description="Offload parameters and optimizer to CPU.")


@register_config(STRATEGY_CONFIGS, "deepspeed")
class DeepSpeedStrategyConfig(StrategySection):
    """DeepSpeed ZeRO stage 0-3."""

    shards_parameters: ClassVar[bool] = True
    type: Literal["deepspeed"] = "deepspeed"
    zero_stage: Literal[0, 1, 2, 3] = Field(2, description="ZeRO stage.")
    cpu_offload: bool = Field(False, description="Offload optimizer (and stage-3 params) to CPU.")
