"""Model loaders of ``model.modality`` ``vision-language`` (Qwen2-VL, Qwen2.5-VL, InternVL:
the family's processor and prompt encoder from :mod:`~lightrft.adapters.hf.vision_families`),
``audio-language`` (Qwen2-Audio) and ``omni`` (the Qwen2.5-Omni thinker): policy,
reference, engine model, prompt encoder.

The vision tower stays frozen unless ``model.train_vision_tower``; LoRA then adapts the
language model's linear layers only (omni: the audio encoder's too). The critic (PPO with
GAE) is a value head over the same family's base model, taking the policy's media inputs
(:class:`~lightrft.adapters.hf.critic.HfCritic`); its vision tower is frozen like the
policy's. The omni thinker has none (its encoders are outside its base model): refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from lightrft.adapters.hf import HfPolicy, HfReferenceModel, LoraParams, load_tokenizer
from lightrft.adapters.hf.audio_language import AudioLanguageEncoder
from lightrft.adapters.hf.critic import HfCritic
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.multimodal_loading import (
    load_feature_extractor,
    load_media_processors,
    load_multimodal_model,
)
from lightrft.adapters.hf.omni import OmniEncoder
from lightrft.adapters.hf.vision_families import vision_encoder, vision_family
from lightrft.adapters.hf.vision_language import freeze_vision_tower, language_model_lora
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.wiring.model_loaders import load_params, lora_params
from lightrft.entrypoints.wiring.registries import BuildContext, ModelLoader


def _model(context: BuildContext, *, train: bool) -> Any:
    return load_multimodal_model(
        context.model_path,
        context.config.model.modality,
        context.device,
        load_params(context.config, context.device, train=train),
    )


def _tokenizer(config: RunConfig, path: Path) -> Any:
    return load_tokenizer(path, trust_remote_code=config.model.trust_remote_code)


@dataclass(frozen=True)
class _Media:
    """What differs between the multimodal modalities: the media processor, how the trained
    model is prepared (frozen parts, LoRA targets) and the prompt encoder."""

    processor: Callable[[BuildContext], Any]
    prepare: Callable[[Any, LoraParams | None, BuildContext], LoraParams | None]
    encoder: Callable[[Any, Any], Any]  # (tokenizer, processor) -> PromptEncoder


def _prepare_vision(
    model: Any, lora: LoraParams | None, context: BuildContext
) -> LoraParams | None:
    """LoRA on the language model (and the tower when trained); else freeze the tower."""
    train_vision = context.config.model.train_vision_tower
    if lora is not None:
        return language_model_lora(model, lora, train_vision=train_vision)
    if not train_vision:
        freeze_vision_tower(model)
    return None


def _prepare_audio(model: Any, lora: LoraParams | None, context: BuildContext) -> LoraParams | None:
    return lora  # every weight trains (or LoRA on the configured targets)


def _image_processor(context: BuildContext) -> Any:
    """The image processor of the checkpoint's vision-language family (Qwen-VL, InternVL)."""
    m = context.config.model
    return vision_family(context.model_path).load_processor(
        context.model_path, min_pixels=m.min_pixels, max_pixels=m.max_pixels
    )


def _feature_extractor(context: BuildContext) -> Any:
    return load_feature_extractor(context.model_path)


def _media_processors(context: BuildContext) -> Any:
    m = context.config.model
    return load_media_processors(
        context.model_path, min_pixels=m.min_pixels, max_pixels=m.max_pixels
    )


def _omni_encoder(tokenizer: Any, processors: Any) -> OmniEncoder:
    return OmniEncoder(tokenizer, processors.image_processor, processors.feature_extractor)


def _loader(media: _Media) -> ModelLoader:
    def policy(context: BuildContext) -> HfPolicy:
        m = context.config.model
        model = _model(context, train=True)
        lora = media.prepare(model, lora_params(context.config), context)
        return HfPolicy(
            model,
            lora=lora,
            packing=m.packing,
            chunk_size=m.logprob_chunk_size,
            tokenizer=context.tokenizer,
            multimodal=multimodal_inputs_for(model),
            processors=[media.processor(context)],  # saved with the exported model
        )

    def encoder(context: BuildContext) -> Any:
        return media.encoder(context.tokenizer, media.processor(context))

    def critic(context: BuildContext) -> HfCritic:
        model = _model(context, train=True)
        media.prepare(model, None, context)  # the policy's frozen parts, without LoRA
        return HfCritic(
            model, init_seed=context.config.train.seed, multimodal=multimodal_inputs_for(model)
        )

    return ModelLoader(
        tokenizer=_tokenizer,
        policy=policy,
        reference=_reference,
        critic=critic,
        generation_model=_generation_model,
        prompt_encoder=encoder,
        engine_inputs=multimodal_inputs_for,
    )


def _reference(context: BuildContext) -> HfReferenceModel:
    model = _model(context, train=False)
    return HfReferenceModel(
        model,
        context.device,
        packing=context.config.model.packing,
        chunk_size=context.config.model.logprob_chunk_size,
        multimodal=multimodal_inputs_for(model),
    )


def _generation_model(context: BuildContext) -> torch.nn.Module:
    return _model(context, train=False)  # type: ignore[no-any-return]


VISION_LANGUAGE_LOADER = _loader(_Media(_image_processor, _prepare_vision, vision_encoder))
AUDIO_LANGUAGE_LOADER = _loader(_Media(_feature_extractor, _prepare_audio, AudioLanguageEncoder))
OMNI_LOADER = _loader(_Media(_media_processors, _prepare_vision, _omni_encoder))
