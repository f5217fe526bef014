"""Config models of the built-in training strategies (``backend.strategy``)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from lightrft.entrypoints.config.components import (
    STRATEGY_CONFIGS,
    ComponentSection,
    RunView,
    register_config,
)


class StrategySection(ComponentSection):
    """Base of a strategy's config."""

    shards_parameters: ClassVar[bool] = False
    """Whether ranks hold parameter shards (then an engine cannot run the module in place)."""
    dtypes: ClassVar[tuple[str, ...]] = ("fp32", "bf16", "fp16")
    """The ``model.dtype`` values this strategy trains correctly."""

    def weights_dtype(self, dtype: str) -> str:
        """The dtype the trained model is loaded in when ``model.dtype`` is ``dtype``
        (default: that dtype; the strategy keeps fp32 master weights itself)."""
        return dtype

    def check_in_run(self, run: RunView) -> None:
        """Refuses a ``model.dtype`` this strategy has no correct training path for."""
        if run.model.dtype not in self.dtypes:
            raise ValueError(
                f"model.dtype {run.model.dtype!r} is not supported with backend.strategy "
                f"{self.type!r} (it takes {', '.join(self.dtypes)}); use model.dtype=bf16, or "
                "backend.strategy=single, which trains fp16 with dynamic loss scaling"
            )


@register_config(STRATEGY_CONFIGS, "single")
class SingleStrategyConfig(StrategySection):
    """One device, plain AdamW (also each rank of plain data parallelism)."""

    type: Literal["single"] = "single"


@register_config(STRATEGY_CONFIGS, "fsdp2")
class Fsdp2StrategyConfig(StrategySection):
    """PyTorch FSDP2 (``fully_shard``): parameters, gradients and optimizer state sharded."""

    shards_parameters: ClassVar[bool] = True
    dtypes: ClassVar[tuple[str, ...]] = ("fp32", "bf16")
    type: Literal["fsdp2"] = "fsdp2"
    cpu_offload: bool = Field(False, description="Offload parameters and optimizer to CPU.")

    def weights_dtype(self, dtype: str) -> str:
        """fp32: FSDP2's bf16 policy computes in bf16 over fp32 shards (the master weights)."""
        return "fp32"


@register_config(STRATEGY_CONFIGS, "deepspeed")
class DeepSpeedStrategyConfig(StrategySection):
    """DeepSpeed ZeRO stage 0-3."""

    shards_parameters: ClassVar[bool] = True
    dtypes: ClassVar[tuple[str, ...]] = ("fp32", "bf16")
    type: Literal["deepspeed"] = "deepspeed"
    zero_stage: Literal[0, 1, 2, 3] = Field(2, description="ZeRO stage.")
    cpu_offload: bool = Field(False, description="Offload optimizer (and stage-3 params) to CPU.")
