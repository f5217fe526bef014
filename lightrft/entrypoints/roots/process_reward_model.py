"""The process reward model of ``lightrft rm train --kind process``: the base LM in ``path``
(text, or a vision-language family with its media reader), on the reward-model root's device
(the backend, outputs and tokenizer are :class:`~.reward_model.RewardModelRoot`'s)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from lightrft.adapters.hf.loading import DTypeName
from lightrft.adapters.reward_models.process import HfProcessRewardModel
from lightrft.adapters.reward_models.process_card import ProcessRewardCard
from lightrft.entrypoints.roots.reward_model import RewardModelRoot
from lightrft.entrypoints.wiring.model_loaders import DTYPES
from lightrft.entrypoints.wiring.process_reward_models import process_lm_parts


def process_reward_model(
    root: RewardModelRoot, path: Path, tokenizer: Any, card: ProcessRewardCard, dtype: str
) -> HfProcessRewardModel:
    """The trainable PRM: the LM in ``path`` of ``card.modality``, on ``root``'s device."""
    encoder = root.media_encoder(path, card.modality, tokenizer)
    weights = cast(DTypeName, DTYPES[dtype])
    lm, media = process_lm_parts(path, card, encoder, root.device, weights)
    return HfProcessRewardModel(lm, tokenizer, root.device, card=card, media=media)
