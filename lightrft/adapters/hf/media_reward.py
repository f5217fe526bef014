"""Scalar reward models on vision- and audio-language backbones (Qwen2-VL, Qwen2.5-VL,
Qwen2-Audio, the Qwen2.5-Omni thinker): the classifier, its loading and saving, and the media
reader.

Shape letters: B rows, T tokens, H hidden size.

transformers has no sequence-classification class for these families, so
:class:`MediaRewardClassifier` stands in for one: the family's conditional-generation model
(its backbone, :func:`~lightrft.adapters.hf.media_backbone.media_backbone`, gives last hidden
states (B, T, H) from ids plus media: ``model.model``, or the Omni thinker's encoders and text
model together) and a one-output linear ``score`` head. Saved, it is the model's own HF directory (the language
head kept, so the directory also loads as the plain model) plus ``score_head.safetensors``
and the media processor; loaded from a directory without the head file (a base model), the
head is fresh, drawn from the run's seed.

:class:`HfPairMedia` implements the reward model's ``PairMedia``
(:mod:`~lightrft.adapters.reward_models.media`) with the family's prompt encoder and input
builder: a payload of decoded media is processed here; a payload a prompt encoder already
processed (``<noun>_tokens`` present: RL prompts) is used as it is. An encoder of several
media (``expanders``: images and videos, or the Omni thinker's images, videos and audio)
expands each medium's placeholders in turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from lightrft.adapters.hf.loading import DTypeName, ModelLoadParams
from lightrft.adapters.hf.media_backbone import media_backbone
from lightrft.adapters.hf.media_builder import MediaEncoder
from lightrft.adapters.hf.multimodal_inputs import MediaRequirements, MultimodalInputs
from lightrft.adapters.hf.multimodal_loading import load_multimodal_model
from lightrft.adapters.model_parts.seeds import seeded_init
from lightrft.domain.modality import Payload

HEAD_FILE = "score_head.safetensors"


class MediaRewardClassifier(nn.Module):
    """A multimodal model read as a one-output classifier (see the module docstring)."""

    base_model_prefix = "model"

    def __init__(self, model: Any, processor: Any, *, init_seed: int = 0) -> None:
        super().__init__()
        self.model = model
        self.config = model.config
        backbone = media_backbone(model)
        self._backbone = {"module": backbone.module, "prefix": backbone.prefix}  # not a child
        hidden = int(model.config.get_text_config().hidden_size)
        param = next(model.parameters())
        with seeded_init(init_seed, "reward_model.score_head"):
            self.score = nn.Linear(hidden, 1, bias=False, dtype=param.dtype)
        self.score.to(param.device)
        self._processor = processor

    @property
    def base_model(self) -> nn.Module:
        """The backbone: ids + media -> last hidden states (B, T, H); its parameters are
        ``model``'s (named ``base_model_prefix.*`` by the reward network)."""
        backbone: nn.Module = self._backbone["module"]
        return backbone

    def save_pretrained(self, directory: str | Path, *, state_dict: dict[str, Tensor]) -> None:
        """The model's HF directory (``state_dict`` over its own weights), the head file and
        the processor; ``state_dict`` uses this module's names (``model.*``, ``score.*``)."""
        directory = Path(directory)
        prefix, into = f"{self.base_model_prefix}.", str(self._backbone["prefix"])
        inner = {  # "model.<backbone name>" -> the name in the model's own state dict
            into + k.removeprefix(prefix): v for k, v in state_dict.items() if k != "score.weight"
        }
        full = {**self.model.state_dict(), **inner}  # the language head is not trained
        self.model.save_pretrained(directory, state_dict=full)
        head = state_dict.get("score.weight", self.score.weight).detach().contiguous().cpu()
        save_file({"weight": head}, str(directory / HEAD_FILE))
        self._processor.save_pretrained(directory)


def load_media_reward_classifier(
    path: str | Path,
    modality: str,
    device: torch.device,
    processor: Any,
    *,
    dtype: DTypeName = "float32",
    init_seed: int = 0,
) -> MediaRewardClassifier:
    """The classifier of a multimodal directory: its saved head, else a fresh seeded one."""
    model = load_multimodal_model(path, modality, device, ModelLoadParams(dtype=dtype))
    classifier = MediaRewardClassifier(model, processor, init_seed=init_seed)
    head = Path(path) / HEAD_FILE
    if head.is_file():
        weight = load_file(str(head))["weight"]
        expected = tuple(classifier.score.weight.shape)
        if tuple(weight.shape) != expected:
            raise ValueError(f"{head}: head of shape {tuple(weight.shape)}, expected {expected}")
        with torch.no_grad():
            classifier.score.weight.copy_(weight)
    return classifier


class HfPairMedia:
    """``PairMedia`` of one model family (see the module docstring)."""

    def __init__(self, encoder: MediaEncoder, inputs: MultimodalInputs) -> None:
        self.encoder, self._inputs = encoder, inputs

    @property
    def audio_sampling_rate(self) -> int | None:
        """The feature extractor's rate (None for image models)."""
        return self.encoder.requirements.audio_sampling_rate

    @property
    def requirements(self) -> MediaRequirements:
        """The encoder's placeholders (which media the model reads) and audio rate."""
        return self.encoder.requirements

    def expand(self, ids: Sequence[int], payload: Payload, where: str) -> tuple[list[int], Payload]:
        """``ids`` with one placeholder per item expanded, each medium in turn (a
        vision-language model: images, then videos); the processed payload."""
        parts: tuple[MediaEncoder, ...] = tuple(
            getattr(self.encoder, "expanders", None) or (self.encoder,)
        )
        if any(f"{part.noun}_tokens" in payload for part in parts):  # an encoded RL prompt
            out = list(ids)
            for part in parts:
                counts = payload.get(f"{part.noun}_tokens", ())
                _check_count(out, part, len(counts), where)
                out = list(part.expand_ids(out, counts))
            return out, payload
        takes = [part.media_key for part in parts]
        other = sorted(set(payload) - set(takes))
        if other:
            raise ValueError(
                f"{where}: media {other} for a model that takes {', '.join(takes)} only"
            )
        out, processed = list(ids), {}
        for part in parts:
            items = list(payload.get(part.media_key, ()))
            _check_count(out, part, len(items), where)
            if items:
                expanded, processed = part.encode_ids(out, items, where, rest=processed)
                out = list(expanded)
        return out, processed

    def model_kwargs(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload]
    ) -> dict[str, Any]:
        """The family's forward arguments (pixels, token types, M-RoPE positions ...)."""
        return self._inputs.model_inputs(input_ids, attention_mask, payloads).kwargs


def _check_count(ids: Sequence[int], part: MediaEncoder, items: int, where: str) -> None:
    found = list(ids).count(part.placeholder_id)
    if found != items:
        raise ValueError(
            f"{where}: the prompt holds {found} {part.noun} placeholder token(s) but "
            f"{items} {part.noun}(s) came with it; the prompt needs one placeholder "
            "per item (render it with the model's chat template)"
        )
