"""Model loaders of ``model.modality`` ``vision-language`` (Qwen2-VL, Qwen2.5-VL) and
``audio-language`` (Qwen2-Audio): policy, reference, engine model, prompt encoder.

The vision tower stays frozen unless ``model.train_vision_tower``; LoRA then adapts the
language model's linear layers only. A critic (PPO with GAE) is not offered for these
modalities: use a critic-free estimator (GRPO, RLOO, REINFORCE++ ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from lightrft.adapters.hf import HfPolicy, HfReferenceModel, load_tokenizer
from lightrft.adapters.hf.audio_language import AudioLanguageEncoder
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.multimodal_loading import (
    load_feature_extractor,
    load_image_processor,
    load_multimodal_model,
)
from lightrft.adapters.hf.vision_language import (
    VisionLanguageEncoder,
    freeze_vision_tower,
    language_model_lora,
)
from lightrft.domain.ports import Critic
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.wiring.model_loaders import load_params, lora_params
from lightrft.entrypoints.wiring.registries import MODEL_LOADERS, BuildContext, ModelLoader


def _model(context: BuildContext, *, train: bool) -> Any:
    return load_multimodal_model(
        context.model_path,
        context.config.model.modality,
        context.device,
        load_params(context.config, train=train),
    )


def _tokenizer(config: RunConfig, path: Path) -> Any:
    return load_tokenizer(path, trust_remote_code=config.model.trust_remote_code)


def _policy(context: BuildContext) -> HfPolicy:
    m = context.config.model
    model = _model(context, train=True)
    lora = lora_params(context.config)
    if m.modality == "vision-language":
        if lora is not None:
            lora = language_model_lora(model, lora, train_vision=m.train_vision_tower)
        elif not m.train_vision_tower:
            freeze_vision_tower(model)
    return HfPolicy(
        model,
        lora=lora,
        chunk_size=m.logprob_chunk_size,
        tokenizer=context.tokenizer,
        multimodal=multimodal_inputs_for(model),
        processors=[_media_processor(context)],
    )


def _media_processor(context: BuildContext) -> Any:
    """The image processor or feature extractor the exported model needs next to it."""
    m = context.config.model
    if m.modality == "vision-language":
        return load_image_processor(
            context.model_path, min_pixels=m.min_pixels, max_pixels=m.max_pixels
        )
    return load_feature_extractor(context.model_path)


def _reference(context: BuildContext) -> HfReferenceModel:
    model = _model(context, train=False)
    return HfReferenceModel(
        model,
        context.device,
        chunk_size=context.config.model.logprob_chunk_size,
        multimodal=multimodal_inputs_for(model),
    )


def _no_critic(context: BuildContext) -> Critic:
    raise ValueError(
        f"model.modality {context.config.model.modality!r} has no critic (value model); use "
        "a critic-free algorithm.advantage_estimator such as grpo"
    )


def _generation_model(context: BuildContext) -> torch.nn.Module:
    return _model(context, train=False)  # type: ignore[no-any-return]


def _vision_encoder(context: BuildContext) -> VisionLanguageEncoder:
    return VisionLanguageEncoder(context.tokenizer, _media_processor(context))


def _audio_encoder(context: BuildContext) -> AudioLanguageEncoder:
    return AudioLanguageEncoder(context.tokenizer, _media_processor(context))


for _modality, _encoder in (
    ("vision-language", _vision_encoder),
    ("audio-language", _audio_encoder),
):
    MODEL_LOADERS.add(
        _modality,
        ModelLoader(
            tokenizer=_tokenizer,
            policy=_policy,
            reference=_reference,
            critic=_no_critic,
            generation_model=_generation_model,
            prompt_encoder=_encoder,
            engine_inputs=multimodal_inputs_for,
        ),
    )
