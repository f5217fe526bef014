"""Built-in training strategy builders (``backend.strategy``); each returns it unprepared,
with the optimizer of the model it trains (``context.role``: the policy or the critic)."""

from __future__ import annotations

from lightrft.domain.ports import Strategy
from lightrft.entrypoints.config.strategy_configs import (
    DeepSpeedStrategyConfig,
    Fsdp2StrategyConfig,
    SingleStrategyConfig,
)
from lightrft.entrypoints.wiring.registries import BuildContext


def build_single(section: SingleStrategyConfig, context: BuildContext) -> Strategy:
    from lightrft.adapters.single_device import SingleDeviceStrategy

    return SingleDeviceStrategy(context.device, context.optimizer_params())


def build_fsdp2(section: Fsdp2StrategyConfig, context: BuildContext) -> Strategy:
    from lightrft.adapters.fsdp import Fsdp2Strategy

    return Fsdp2Strategy(
        context.optimizer_params(),
        device=context.device,
        mixed_precision="bf16" if context.config.model.dtype == "bf16" else "fp32",
        cpu_offload=section.cpu_offload,
        sequence_parallel_size=context.config.backend.sequence_parallel_size,
    )


def build_deepspeed(section: DeepSpeedStrategyConfig, context: BuildContext) -> Strategy:
    from lightrft.adapters.deepspeed import DeepSpeedStrategy

    return DeepSpeedStrategy(
        context.optimizer_params(),
        device=context.device,
        zero_stage=section.zero_stage,
        bf16=context.config.model.dtype == "bf16",
        cpu_offload=section.cpu_offload,
    )
