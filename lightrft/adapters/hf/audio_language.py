"""Audio-language models of the Qwen2-Audio family: prompts and model inputs.

Shape letters: B rows, T tokens, A audio clips (all clips of a batch), M mel bins,
F feature frames (the extractor pads every clip to 30 s: 3000 frames at 16 kHz, hop 160).

Prompt building (:class:`AudioLanguageEncoder`): the data layer renders the chat with one
``<|audio_bos|><|AUDIO|><|audio_eos|>`` per clip; here the feature extractor (Whisper
log-mel) gives ``input_features`` (A, M, F) and ``feature_attention_mask`` (A, F), and
each ``<|AUDIO|>`` is expanded to the clip's encoder output length: with ``n`` attended
feature frames, ``((n - 1) // 2 + 1 - 2) // 2 + 1`` (a stride-2 convolution, then a
stride-2 pooling). A clip whose sampling rate differs from the extractor's is refused
(naming the row): resampling silently would change what the model hears.

Model inputs (:class:`AudioLanguageInputs`): features of all rows concatenated in row
order, 1-D positions counting attended tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from lightrft.adapters.hf.logprobs import position_ids_from_mask
from lightrft.adapters.hf.multimodal_inputs import (
    MULTIMODAL_INPUTS,
    MediaRequirements,
    ModelInputs,
    check_placeholders,
    checked_media,
    concat_payload_tensors,
    expand_placeholders,
    model_dtype,
    unwrapped,
)
from lightrft.domain.modality import COST_KEY, Payload
from lightrft.domain.types import PromptRecord

AUDIO_TOKEN = "<|AUDIO|>"


def audio_tokens(frames: int) -> int:
    """Positions a clip of ``frames`` attended feature frames occupies in the prompt."""
    return ((frames - 1) // 2 + 1 - 2) // 2 + 1


class AudioLanguageEncoder:
    """Expands audio placeholders and extracts features of prompt records (module doc).

    ``record.multimodal["audios"]`` holds ``(waveform, sampling_rate)`` pairs (1-D float
    arrays); the rate must equal the feature extractor's ``sampling_rate``.
    """

    def __init__(self, tokenizer: Any, feature_extractor: Any, *, audio_token: str = AUDIO_TOKEN):
        self._extractor = feature_extractor
        self._token = audio_token
        self._pad = int(tokenizer.convert_tokens_to_ids(audio_token))
        self._rate = int(feature_extractor.sampling_rate)

    @property
    def requirements(self) -> MediaRequirements:
        """One ``<|AUDIO|>`` per clip; every clip at the feature extractor's rate."""
        return MediaRequirements(audio_placeholder=self._token, audio_sampling_rate=self._rate)

    def encode(self, record: PromptRecord) -> PromptRecord:
        """``record`` with its audio featurized and placeholders expanded (text: unchanged)."""
        clips = checked_media(record, "audios", self._pad, "audio")
        where = str(record.metadata.get("where", record.uid))
        if not clips:
            return record
        for i, (_, rate) in enumerate(clips):
            if int(rate) != self._rate:
                raise ValueError(
                    f"{where}: audio clip {i} is sampled at {rate} Hz; the model's feature "
                    f"extractor expects {self._rate} Hz (resample the data)"
                )
        out = self._extractor(
            [np.asarray(wave, dtype=np.float32) for wave, _ in clips],
            sampling_rate=self._rate,
            return_attention_mask=True,
            padding="max_length",
            return_tensors="pt",
        )
        mask: Tensor = out["attention_mask"].long()  # [A, F]
        counts = [audio_tokens(int(n)) for n in mask.sum(-1).tolist()]
        ids = expand_placeholders(record.prompt_token_ids, self._pad, counts)
        payload: dict[str, Any] = {
            "input_features": out["input_features"],
            "feature_attention_mask": mask,
            "audio_tokens": tuple(counts),
            "where": where,
            COST_KEY: sum(counts),
        }
        return replace(record, prompt_token_ids=ids, multimodal=payload)


class AudioLanguageInputs:
    """Forward arguments of a Qwen2-Audio model for rows with and without audio."""

    def __init__(self, model: nn.Module) -> None:
        base = unwrapped(model)
        self._model = base
        self._audio_token_id = int(base.config.audio_token_id)
        self._suppressed = torch.tensor([self._audio_token_id], dtype=torch.long)

    @property
    def suppressed_token_ids(self) -> Tensor:
        """The audio placeholder id (never generated)."""
        return self._suppressed

    def model_inputs(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload]
    ) -> ModelInputs:
        """See :class:`~lightrft.adapters.hf.multimodal_inputs.MultimodalInputs`."""
        check_placeholders(input_ids, payloads, self._audio_token_id, "audio_tokens", "audio")
        kwargs: dict[str, Any] = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "position_ids": position_ids_from_mask(attention_mask),
        }
        features = concat_payload_tensors(payloads, "input_features")  # [A, M, F]
        if features is not None:
            mask = concat_payload_tensors(payloads, "feature_attention_mask")
            assert mask is not None
            kwargs["input_features"] = features.to(input_ids.device, model_dtype(self._model))
            kwargs["feature_attention_mask"] = mask.to(input_ids.device)
        offsets = torch.zeros(input_ids.shape[0], 1, dtype=torch.long, device=input_ids.device)
        return ModelInputs(kwargs, offsets)


MULTIMODAL_INPUTS.add("qwen2_audio", AudioLanguageInputs)
