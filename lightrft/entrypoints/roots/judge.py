"""The root of ``lightrft rm train --kind generative`` (its SFT run has
:mod:`~lightrft.entrypoints.roots.sft`'s root): the base model and tokenizer, and the judge
a ``generative_rm`` section loads, built through the reward-source registry exactly as a
run's ``reward.sources`` entry is."""

from __future__ import annotations

from pathlib import Path

from lightrft.adapters.reward_models.generative import HfGenerativeRewardModel
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.reward_model_configs import GenerativeRmConfig
from lightrft.entrypoints.roots.policy_free import policy_free_context
from lightrft.entrypoints.wiring import models
from lightrft.entrypoints.wiring.registrations import register_builtins
from lightrft.entrypoints.wiring.registries import REWARD_SOURCES, build


def base_model_path(config: RunConfig) -> Path:
    """``model.path``, or the embedded model when it is unset."""
    return models.model_path(config)


def built_judge(config: RunConfig, section: GenerativeRmConfig) -> HfGenerativeRewardModel:
    """The judge ``section`` loads, on ``config``'s accelerator."""
    register_builtins()
    device = models.device_of(models.build_accelerator(config))
    context = policy_free_context(
        config, Path(str(section.path)), device, who="a judge being evaluated"
    )
    judge = build(REWARD_SOURCES, section, context)
    if not isinstance(judge, HfGenerativeRewardModel):
        raise TypeError(f"generative_rm built a {type(judge).__name__}")
    return judge
