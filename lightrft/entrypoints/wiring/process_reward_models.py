"""Process reward models of every modality: the causal LM (text) or the family's
vision-language LM with its media reader, for ``lightrft rm train --kind process`` and the
``process_rm`` reward source."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import torch

from lightrft.adapters.hf.loading import DTypeName, ModelLoadParams
from lightrft.adapters.hf.media_reward import HfPairMedia
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.multimodal_loading import load_multimodal_model
from lightrft.adapters.reward_models import load_reward_tokenizer
from lightrft.adapters.reward_models.process import HfProcessRewardModel, load_process_lm
from lightrft.adapters.reward_models.process_card import ProcessRewardCard
from lightrft.entrypoints.config.process_reward_config import ProcessRmConfig
from lightrft.entrypoints.wiring.model_loaders import DTYPES
from lightrft.entrypoints.wiring.registries import BuildContext
from lightrft.entrypoints.wiring.scalar_reward_models import reward_media_encoder


def process_lm_parts(
    path: str | Path,
    card: ProcessRewardCard,
    encoder: Any | None,
    device: torch.device,
    dtype: DTypeName,
) -> tuple[Any, HfPairMedia | None]:
    """The LM in ``path`` and, for a media ``encoder``, the family's media reader."""
    if encoder is None:
        return load_process_lm(path, device, dtype=dtype), None
    lm = load_multimodal_model(path, card.modality, device, ModelLoadParams(dtype=dtype))
    return lm, HfPairMedia(encoder, multimodal_inputs_for(lm))


def build_process_rm(section: ProcessRmConfig, context: BuildContext) -> HfProcessRewardModel:
    """The ``process_rm`` source: the saved PRM, frozen, on the run's device."""
    card = ProcessRewardCard.load(section.path) or ProcessRewardCard()
    tokenizer = load_reward_tokenizer(section.path, trust_remote_code=section.trust_remote_code)
    encoder = reward_media_encoder(section.path, card.modality, context.config, tokenizer)
    if encoder is None:
        return HfProcessRewardModel.from_pretrained(
            section.path,
            context.device,
            dtype=cast(DTypeName, DTYPES[section.dtype]),
            trust_remote_code=section.trust_remote_code,
            name=section.label,
            aggregate=section.aggregate,
            micro_batch_size=section.micro_batch_size,
            empty_score=section.empty_score,
            step_threshold=section.step_threshold,
        )
    weights = cast(DTypeName, DTYPES[section.dtype])
    lm, media = process_lm_parts(section.path, card, encoder, context.device, weights)
    lm.requires_grad_(False)
    lm.eval()
    return HfProcessRewardModel(
        lm,
        tokenizer,
        context.device,
        card=card,
        media=media,
        name=section.label,
        aggregate=section.aggregate,
        micro_batch_size=section.micro_batch_size,
        empty_score=section.empty_score,
        step_threshold=section.step_threshold,
    )
