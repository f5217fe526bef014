"""Builders of the reward-model sources (``reward.sources`` types ``scalar_rm`` ...)."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

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
from lightrft.entrypoints.wiring.registries import (
    JUDGE_ENGINES,
    MODEL_LOADERS,
    SCALAR_RM_ENGINES,
    BuildContext,
)


def build_scalar_rm(section: ScalarRmConfig, context: BuildContext) -> RewardSource:
    """The scalar reward model on its ``engine`` (``wiring/reward_engines.py``)."""
    return SCALAR_RM_ENGINES.get(section.engine)(section, context)


def build_remote(section: RemoteRewardConfig, context: BuildContext) -> RewardSource:
    """serve-reward's protocol (``/score``), or another framework's (``protocol``:
    ``lightrft/adapters/reward_protocols``), with the same retries, deadlines and token."""
    from lightrft.adapters.reward_protocols import WIRE_FORMATS, PeerRemoteRewardSource
    from lightrft.adapters.reward_service import RemoteRewardSource

    token = None
    if section.token_env is not None:
        token = os.environ.get(section.token_env)
        if not token:
            raise ValueError(
                f"reward source {section.label!r}: environment variable {section.token_env} "
                "(token_env) is not set"
            )
    if section.protocol in WIRE_FORMATS:
        source = partial(PeerRemoteRewardSource, section.url, WIRE_FORMATS[section.protocol])
    else:
        source = partial(RemoteRewardSource, section.url)
    return copy_fields(
        source,
        section,
        "timeout_s max_attempts backoff_base_s backoff_max_s request_batch on_failure "
        "failure_score",
        name=section.label,
        token=token,
    )


def build_unit_tests(section: UnitTestsRewardConfig, context: BuildContext) -> UnitTestsReward:
    return copy_fields(
        partial(UnitTestsReward, open_sandbox(section.sandbox)),
        section,
        "timeout_s memory_mb pass_score fail_score max_parallel",
        name=section.label,
    )


def build_generative_rm(section: GenerativeRmConfig, context: BuildContext) -> RewardSource:
    from lightrft.adapters.hf import load_tokenizer
    from lightrft.adapters.reward_models.generative import DEFAULT_TEMPLATE, HfGenerativeRewardModel
    from lightrft.adapters.reward_models.verdict import verdict_parser

    path = Path(section.path) if section.path else context.model_path
    tokenizer = load_tokenizer(path)
    encoder = None
    if MODEL_LOADERS.get(section.modality).prompt_encoder is not None:  # a media judge
        from lightrft.entrypoints.wiring.scalar_reward_models import reward_media_encoder

        encoder = reward_media_encoder(path, section.modality, context.config, tokenizer)
    engine = JUDGE_ENGINES.get(section.engine)(section, context, path)
    parser = verdict_parser(section.verdict, max_score=section.max_score, labels=section.labels)
    return HfGenerativeRewardModel(
        engine,
        tokenizer,
        parser,
        name=section.label,
        template=section.template or DEFAULT_TEMPLATE,
        unparsable_score=section.unparsable_score,
        max_new_tokens=section.max_new_tokens,
        media_encoder=encoder,
        ignore_media=section.ignore_media,
    )
