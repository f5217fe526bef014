"""Builders of the reward-model sources (``reward.sources`` types ``scalar_rm`` ...)."""

from __future__ import annotations

import os
from functools import partial

from lightrft.adapters.reward_models import HfScalarRewardModel
from lightrft.adapters.rewards.unit_tests import UnitTestsReward
from lightrft.adapters.sandbox import open_sandbox
from lightrft.domain.ports import RewardSource
from lightrft.entrypoints.config.reward_model_configs import (
    GenerativeRmConfig,
    RemoteRewardConfig,
    ScalarRmConfig,
    UnitTestsRewardConfig,
)
from lightrft.entrypoints.field_copy import copy_fields
from lightrft.entrypoints.wiring.model_loaders import DTYPES
from lightrft.entrypoints.wiring.registries import REWARD_SOURCES, BuildContext
from lightrft.entrypoints.wiring.scalar_reward_models import load_scalar_rm


@REWARD_SOURCES.register("scalar_rm")
def build_scalar_rm(section: ScalarRmConfig, context: BuildContext) -> HfScalarRewardModel:
    return load_scalar_rm(  # of the modality its card names (text, vision, audio)
        section.path,
        context.device,
        context.config,
        dtype=DTYPES[section.dtype],
        trust_remote_code=section.trust_remote_code,
        init_seed=context.config.train.seed,  # a causal LM path gets a fresh, seeded head
        name=section.label,
        normalize=section.normalize,
        micro_batch_size=section.micro_batch_size,
    )


@REWARD_SOURCES.register("remote")
def build_remote(section: RemoteRewardConfig, context: BuildContext) -> RewardSource:
    from lightrft.adapters.reward_service import RemoteRewardSource

    token = None
    if section.token_env is not None:
        token = os.environ.get(section.token_env)
        if not token:
            raise ValueError(
                f"reward source {section.label!r}: environment variable {section.token_env} "
                "(token_env) is not set"
            )
    return copy_fields(
        partial(RemoteRewardSource, section.url),
        section,
        "timeout_s max_attempts backoff_base_s backoff_max_s request_batch on_failure "
        "failure_score",
        name=section.label,
        token=token,
    )


@REWARD_SOURCES.register("unit_tests")
def build_unit_tests(section: UnitTestsRewardConfig, context: BuildContext) -> UnitTestsReward:
    return copy_fields(
        partial(UnitTestsReward, open_sandbox(section.sandbox)),
        section,
        "timeout_s memory_mb pass_score fail_score",
        name=section.label,
    )


@REWARD_SOURCES.register("generative_rm")
def build_generative_rm(section: GenerativeRmConfig, context: BuildContext) -> RewardSource:
    from pathlib import Path

    from lightrft.adapters.hf import (
        HfRolloutEngine,
        ModelLoadParams,
        load_causal_lm,
        load_tokenizer,
    )
    from lightrft.adapters.reward_models.generative import DEFAULT_TEMPLATE, HfGenerativeRewardModel
    from lightrft.adapters.reward_models.verdict import LabelVerdict, ScoreVerdict

    path = Path(section.path) if section.path else context.model_path
    params = ModelLoadParams(dtype=DTYPES[section.dtype])  # type: ignore[arg-type]
    tokenizer = load_tokenizer(path)
    engine = HfRolloutEngine(
        load_causal_lm(path, context.device, params), tokenizer, context.device
    )
    parser = (
        ScoreVerdict(section.max_score)
        if section.verdict == "score"
        else LabelVerdict(section.labels)
    )
    return HfGenerativeRewardModel(
        engine,
        tokenizer,
        parser,
        name=section.label,
        template=section.template or DEFAULT_TEMPLATE,
        unparsable_score=section.unparsable_score,
        max_new_tokens=section.max_new_tokens,
    )
