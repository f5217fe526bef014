"""The root of ``lightrft rm rejection-sample``: the model's tokenizer, its prompt encoder (a
vision- or audio-language model's media) and an HF rollout engine over it (the ``generative_rm`` judge engine, built through ``JUDGE_ENGINES`` as a
judge of ``model.modality`` is), on the detected accelerator."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from lightrft.adapters.hf import load_tokenizer
from lightrft.domain.ports import RolloutEngine
from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.config.reward_model_configs import GenerativeRmConfig
from lightrft.entrypoints.roots.policy_free import policy_free_context
from lightrft.entrypoints.wiring import models
from lightrft.entrypoints.wiring.registrations import register_builtins
from lightrft.entrypoints.wiring.registries import JUDGE_ENGINES
from lightrft.entrypoints.wiring.scalar_reward_models import reward_media_encoder


class JudgeSampler(NamedTuple):
    """The tokenizer judge prompts are rendered with, the engine that samples them and the
    model's prompt encoder (None: a text model), which processes the prompts' media."""

    tokenizer: Any
    engine: RolloutEngine
    encoder: Any | None = None


def judge_tokenizer(model: str) -> Any:
    """The tokenizer of the model directory ``model``."""
    return load_tokenizer(Path(model))


def judge_sampler(model: str, *, modality: str = "text", dtype: str = "fp32") -> JudgeSampler:
    """The tokenizer and HF rollout engine of ``model``."""
    register_builtins()
    config = load_config(None, [f"model.path={model}", f"model.modality={modality}"])
    device = models.device_of(models.build_accelerator(config))
    section = GenerativeRmConfig.model_validate(
        {"path": model, "modality": modality, "dtype": dtype}
    )
    context = policy_free_context(config, Path(model), device, who="rejection sampling")
    engine = JUDGE_ENGINES.get("hf")(section, context, Path(model))
    tokenizer = judge_tokenizer(model)
    encoder = reward_media_encoder(model, modality, config, tokenizer)
    return JudgeSampler(tokenizer, engine, encoder)
