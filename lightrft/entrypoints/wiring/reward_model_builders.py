"""Builders of the reward-model sources (``reward.sources`` types ``scalar_rm`` ...)."""

from __future__ import annotations

from lightrft.adapters.reward_models import HfScalarRewardModel
from lightrft.entrypoints.config.reward_model_configs import ScalarRmConfig
from lightrft.entrypoints.wiring.model_loaders import DTYPES
from lightrft.entrypoints.wiring.registries import REWARD_SOURCES, BuildContext


@REWARD_SOURCES.register("scalar_rm")
def build_scalar_rm(section: ScalarRmConfig, context: BuildContext) -> HfScalarRewardModel:
    return HfScalarRewardModel.from_pretrained(
        section.path,
        context.device,
        dtype=DTYPES[section.dtype],
        trust_remote_code=section.trust_remote_code,
        name=section.label,
        normalize=section.normalize,
        micro_batch_size=section.micro_batch_size,
    )
