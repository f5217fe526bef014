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
from typing import Any

import numpy as np
from torch import Tensor

from lightrft.adapters.hf import media_builder as media
from lightrft.adapters.hf.multimodal_inputs import MULTIMODAL_INPUTS, MediaRequirements
from lightrft.domain.modality import Payload

AUDIO_TOKEN = "<|AUDIO|>"


def audio_tokens(frames: int) -> int:
    """Positions a clip of ``frames`` attended feature frames occupies in the prompt."""
    return ((frames - 1) // 2 + 1 - 2) // 2 + 1


class AudioLanguageEncoder(media.MediaEncoder):
    """Expands audio placeholders and extracts features of prompt records (module doc).

    ``record.multimodal["audios"]`` holds ``(waveform, sampling_rate)`` pairs (1-D float
    arrays); the rate must equal the feature extractor's ``sampling_rate``.
    """

    media_key, noun = "audios", "audio"

    def __init__(self, tokenizer: Any, feature_extractor: Any, *, audio_token: str = AUDIO_TOKEN):
        super().__init__(tokenizer, audio_token, feature_extractor)
        self._extractor = feature_extractor
        self._rate = int(feature_extractor.sampling_rate)

    @property
    def requirements(self) -> MediaRequirements:
        """One ``<|AUDIO|>`` per clip; every clip at the feature extractor's rate."""
        return MediaRequirements(audio_placeholder=self._token, audio_sampling_rate=self._rate)

    def process(self, items: list[Any], where: str) -> media.ProcessedMedia:
        """Log-mel features (A, M, F) and frame masks (A, F) of the clips (rates checked)."""
        for i, (_, rate) in enumerate(items):
            if int(rate) != self._rate:
                raise ValueError(
                    f"{where}: audio clip {i} is sampled at {rate} Hz; the model's feature "
                    f"extractor expects {self._rate} Hz (resample the data)"
                )
        out = self._extractor(
            [np.asarray(wave, dtype=np.float32) for wave, _ in items],
            sampling_rate=self._rate,
            return_attention_mask=True,
            padding="max_length",
            return_tensors="pt",
        )
        mask: Tensor = out["attention_mask"].long()  # [A, F]
        counts = [audio_tokens(int(n)) for n in mask.sum(-1).tolist()]
        tensors = {"input_features": out["input_features"], "feature_attention_mask": mask}
        return media.ProcessedMedia(tensors, counts, sum(counts))


class AudioLanguageInputs(media.MediaInputs):
    """Forward arguments of a Qwen2-Audio model for rows with and without audio."""

    token_id_key, noun = "audio_token_id", "audio"

    def media_arguments(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload]
    ) -> media.MediaArguments | None:
        """Features of all rows in row order (positions stay 1-D)."""
        features = self.payload_tensor(payloads, "input_features", input_ids, features=True)
        if features is None:  # [A, M, F]
            return None
        mask = self.payload_tensor(payloads, "feature_attention_mask", input_ids)
        assert mask is not None
        return media.MediaArguments({"input_features": features, "feature_attention_mask": mask})


MULTIMODAL_INPUTS.add("qwen2_audio", AudioLanguageInputs)
