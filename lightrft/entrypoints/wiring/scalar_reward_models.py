"""Scalar reward models of every modality: the classifier, tokenizer and media reader of a
directory, for ``lightrft rm`` and the ``scalar_rm`` reward source.

A text backbone is an HF sequence classifier (:mod:`lightrft.adapters.reward_models.loading`);
a vision- or audio-language one (``modality``, from ``lightrft rm train --modality`` or the
saved card) is the family's model with a score head
(:mod:`lightrft.adapters.hf.media_reward`), its media read by the same prompt encoder and input
builder as the policy's (``model.min_pixels`` / ``model.max_pixels`` of ``config`` bound the
images).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import torch
from typing_extensions import Unpack

from lightrft.adapters.hf.loading import DTypeName
from lightrft.adapters.hf.media_reward import HfPairMedia, load_media_reward_classifier
from lightrft.adapters.hf.multimodal_inputs import MULTIMODAL_INPUTS, multimodal_inputs_for
from lightrft.adapters.reward_models import HfScalarRewardModel, load_reward_tokenizer
from lightrft.adapters.reward_models.loading import load_card, load_reward_classifier
from lightrft.adapters.reward_models.media import PairMedia
from lightrft.adapters.reward_models.scalar import ScoringOptions
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.wiring.registries import MODEL_LOADERS, BuildContext


class ScalarRmParts(NamedTuple):
    """What an ``HfScalarRewardModel`` is built from (``media`` None: a text model)."""

    classifier: Any
    tokenizer: Any
    media: PairMedia | None


def _no_policy() -> Any:
    raise RuntimeError("a reward model has no policy")


def reward_media_encoder(
    path: str | Path, modality: str, config: RunConfig, tokenizer: Any
) -> Any | None:
    """The prompt encoder of a ``modality`` reward model in ``path`` (None for text), built
    from its processor alone (no weights loaded: data can be checked first)."""
    make = MODEL_LOADERS.get(modality).prompt_encoder
    if make is None:  # a text modality: no media to read
        _refuse_multimodal_as_text(Path(path))
        return None
    model = config.model.model_copy(update={"modality": modality, "path": str(path)})
    run = config.model_copy(update={"model": model})
    context = BuildContext(run, Path(path), torch.device("cpu"), tokenizer, _no_policy)
    return make(context)


def scalar_rm_parts(
    path: str | Path,
    modality: str,
    encoder: Any | None,
    tokenizer: Any,
    device: torch.device,
    *,
    dtype: DTypeName = "float32",
    init_seed: int = 0,
) -> ScalarRmParts:
    """The reward model in ``path``: a text classifier, or a ``modality`` one reading media
    with ``encoder`` (:func:`reward_media_encoder`)."""
    if encoder is None:
        classifier = load_reward_classifier(
            path, device, tokenizer=tokenizer, dtype=dtype, init_seed=init_seed
        )
        return ScalarRmParts(classifier, tokenizer, None)
    media_classifier = load_media_reward_classifier(
        path, modality, device, encoder.processor, dtype=dtype, init_seed=init_seed
    )
    inputs = multimodal_inputs_for(media_classifier.model)
    return ScalarRmParts(media_classifier, tokenizer, HfPairMedia(encoder, inputs))


def _refuse_multimodal_as_text(path: Path) -> None:
    """A vision- / audio-language directory loaded as text would lose its media silently."""
    config = path / "config.json"
    if not config.is_file():
        return
    model_type = json.loads(config.read_text()).get("model_type")
    if model_type in MULTIMODAL_INPUTS:
        raise ValueError(
            f"{path} holds a {model_type} model (vision / audio); train its reward model with "
            "--modality vision-language or audio-language"
        )


def load_scalar_rm(
    path: str | Path,
    device: torch.device,
    config: RunConfig,
    *,
    dtype: DTypeName = "float32",
    trust_remote_code: bool = False,
    init_seed: int = 0,
    **scoring: Unpack[ScoringOptions],
) -> HfScalarRewardModel:
    """A saved scalar reward model, frozen in eval mode, of the modality its card names."""
    card = load_card(path)
    if MODEL_LOADERS.get(card.modality).prompt_encoder is None:  # text: the plain loader
        _refuse_multimodal_as_text(Path(path))
        return HfScalarRewardModel.from_pretrained(
            path,
            device,
            dtype=dtype,
            trust_remote_code=trust_remote_code,
            init_seed=init_seed,
            **scoring,
        )
    tokenizer = load_reward_tokenizer(path, trust_remote_code=trust_remote_code)
    encoder = reward_media_encoder(path, card.modality, config, tokenizer)
    parts = scalar_rm_parts(
        path, card.modality, encoder, tokenizer, device, dtype=dtype, init_seed=init_seed
    )
    return HfScalarRewardModel.for_scoring(
        parts.classifier, tokenizer, device, card=card, media=parts.media, **scoring
    )
