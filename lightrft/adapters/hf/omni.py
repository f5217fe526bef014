"""The Qwen2.5-Omni thinker (text, images and audio in one row): prompts and model inputs.

Shape letters: B rows, T tokens, N image patches, I images, A audio clips, F feature frames
(all of a batch).

Prompt building (:class:`OmniEncoder`): the data layer renders the chat with one
``<|vision_bos|><|IMAGE|><|vision_eos|>`` per image and one
``<|audio_bos|><|AUDIO|><|audio_eos|>`` per clip; the Qwen2-VL image encoder and the
Qwen2-Audio audio encoder (:mod:`vision_language`, :mod:`audio_language`, here with the
thinker's placeholders) run one after the other on the record, so its payload holds both
media: ``pixel_values`` (N, D), ``image_grid_thw`` (I, 3), ``input_features`` (A, M, F),
``feature_attention_mask`` (A, F). Each ``<|IMAGE|>`` becomes ``t * h * w / merge**2``
pads, each ``<|AUDIO|>`` ``((n - 1) // 2 + 1 - 2) // 2 + 1`` for ``n`` attended frames: the
counts ``Qwen2_5OmniProcessor`` uses, and the lengths of the thinker's encoders' outputs.
Videos (``<|vision_bos|><|VIDEO|><|vision_eos|>``) go through
:class:`~lightrft.adapters.hf.video_language.VideoEncoder` (``pixel_values_videos``,
``video_grid_thw``, ``second_per_grid_ts``, the latter given to ``get_rope_index`` as
``second_per_grids``); a video's own audio track is not read (``use_audio_in_video`` off).

Model inputs (:class:`OmniInputs`): pixels and features of all rows concatenated in row
order, and M-RoPE position ids (3, B, T) with their offsets (B, 1) from the thinker's own
``get_rope_index`` (``audio_seqlens``: the attended frames of each clip). That function
finds an image as the token after ``<|vision_bos|>`` and counts ``<|audio_bos|>`` tokens
as clips, so both start tokens are never generated (like the placeholders), and a row whose
start tokens do not match its media is refused by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from lightrft.adapters.hf import media_builder as media
from lightrft.adapters.hf.audio_language import AudioLanguageEncoder
from lightrft.adapters.hf.multimodal_inputs import (
    MULTIMODAL_INPUTS,
    MediaRequirements,
    row_name,
)
from lightrft.adapters.hf.multimodal_loading import MediaProcessors
from lightrft.adapters.hf.video_language import VideoEncoder
from lightrft.adapters.hf.vision_language import VisionLanguageEncoder
from lightrft.domain.modality import Payload
from lightrft.domain.types import PromptRecord

IMAGE_TOKEN = "<|IMAGE|>"
AUDIO_TOKEN = "<|AUDIO|>"
VIDEO_TOKEN = "<|VIDEO|>"
FAMILY = "qwen2_5_omni_thinker"  # config.model_type of a saved thinker
_START_KEYS = ("vision_start_token_id", "audio_start_token_id")  # config keys


class OmniEncoder:
    """Processes the images and the audio clips of prompt records (module doc).

    Args:
        tokenizer: the thinker's tokenizer (knows ``<|IMAGE|>`` and ``<|AUDIO|>``).
        image_processor: the Qwen2-VL image processor (PIL backend), bounding image sizes.
        feature_extractor: the Whisper feature extractor (its rate is every clip's).
    """

    def __init__(self, tokenizer: Any, image_processor: Any, feature_extractor: Any) -> None:
        self._image = VisionLanguageEncoder(tokenizer, image_processor, image_token=IMAGE_TOKEN)
        self._video = VideoEncoder(tokenizer, image_processor, video_token=VIDEO_TOKEN)
        self._audio = AudioLanguageEncoder(tokenizer, feature_extractor, audio_token=AUDIO_TOKEN)

    @property
    def requirements(self) -> MediaRequirements:
        """One ``<|IMAGE|>`` per image, one ``<|VIDEO|>`` per video, one ``<|AUDIO|>`` per
        clip at the extractor's rate."""
        audio = self._audio.requirements
        return MediaRequirements(
            image_placeholder=self._image.requirements.image_placeholder,
            audio_placeholder=audio.audio_placeholder,
            audio_sampling_rate=audio.audio_sampling_rate,
            video_placeholder=self._video.requirements.video_placeholder,
        )

    @property
    def expanders(self) -> tuple[media.MediaEncoder, ...]:
        """The encoder of each medium, in the order :meth:`encode` runs them (SFT rows and
        reward-model pairs expand each in turn)."""
        return (self._image, self._video, self._audio)

    @property
    def processor(self) -> MediaProcessors:
        """The image processor and the feature extractor (saved together with a model)."""
        return MediaProcessors(self._image.processor, self._audio.processor)

    def encode(self, record: PromptRecord) -> PromptRecord:
        """``record`` with images, videos, then clips processed and expanded (text:
        unchanged)."""
        return self._audio.encode(self._video.encode(self._image.encode(record)))


class OmniInputs(media.MediaInputs):
    """Forward arguments of a Qwen2.5-Omni thinker for rows with images, audio, both or
    neither (module doc); the padded path only (packing is not proven equal here)."""

    token_id_key, noun = "image_token_id", "image"
    packs = False

    def __init__(self, model: nn.Module) -> None:
        super().__init__(model)
        config = self._model.config
        missing = [key for key in _START_KEYS if getattr(config, key, None) is None]
        if missing:
            raise ValueError(
                f"the thinker's config has no {', '.join(missing)}; its get_rope_index needs "
                "them to place images and audio (the released checkpoints set them)"
            )
        self._audio_id = int(config.audio_token_id)
        self._video_id = int(config.video_token_id)
        self._vision_start = int(config.vision_start_token_id)
        self._audio_start = int(config.audio_start_token_id)

    def placeholder_ids(self, config: Any) -> set[int]:
        """The image, video and audio placeholders and the vision / audio start tokens."""
        ids = {int(getattr(config, key)) for key in ("image_token_id", "audio_token_id")}
        ids |= {int(getattr(config, key, -1)) for key in ("video_token_id", *_START_KEYS)}
        return ids - {-1}

    def check_rows(self, input_ids: Tensor, payloads: Sequence[Payload]) -> None:
        """Image, video and audio placeholder counts, and one start token per image or video
        and per clip."""
        super().check_rows(input_ids, payloads)
        media.check_placeholders(input_ids, payloads, self._audio_id, "audio_tokens", "audio")
        media.check_placeholders(input_ids, payloads, self._video_id, "video_tokens", "video")
        vision_starts = (input_ids == self._vision_start).sum(-1).tolist()  # [B]
        audio_starts = (input_ids == self._audio_start).sum(-1).tolist()  # [B]
        for row, payload in enumerate(payloads):
            images = len(payload.get("image_tokens", ())) if payload else 0
            videos = len(payload.get("video_tokens", ())) if payload else 0
            clips = len(payload.get("audio_tokens", ())) if payload else 0
            if (vision_starts[row], audio_starts[row]) != (images + videos, clips):
                seen = f"{images} image(s)" + (f", {videos} video(s)" if videos else "")
                raise ValueError(
                    f"{row_name(payload, row)}: {vision_starts[row]} vision-start and "
                    f"{audio_starts[row]} audio-start tokens but its media are {seen} and "
                    f"{clips} clip(s); the thinker expects one start token before each "
                    "image's, video's and clip's placeholders"
                )

    def media_arguments(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload]
    ) -> media.MediaArguments | None:
        """Pixels and audio features of all rows in row order, and M-RoPE positions."""
        pixels = self.payload_tensor(payloads, "pixel_values", input_ids, features=True)
        features = self.payload_tensor(payloads, "input_features", input_ids, features=True)
        videos = self.payload_tensor(payloads, "pixel_values_videos", input_ids, features=True)
        if pixels is None and features is None and videos is None:  # [N, D], [A, M, F]
            return None
        video_grid = self.payload_tensor(payloads, "video_grid_thw", input_ids)  # [V, 3]
        seconds = self.payload_tensor(payloads, "second_per_grid_ts", input_ids)  # [V]
        grid = self.payload_tensor(payloads, "image_grid_thw", input_ids)  # [I, 3]
        frames = self.payload_tensor(payloads, "feature_attention_mask", input_ids)  # [A, F]
        kwargs: dict[str, Any] = {}
        if pixels is not None:
            kwargs.update(pixel_values=pixels, image_grid_thw=grid)
        if features is not None:
            kwargs.update(input_features=features, feature_attention_mask=frames)
        if videos is not None:
            kwargs.update(pixel_values_videos=videos, video_grid_thw=video_grid)
        positions, offsets = self._model.get_rope_index(
            input_ids,
            image_grid_thw=grid,
            video_grid_thw=video_grid,
            second_per_grids=seconds,
            attention_mask=attention_mask,
            audio_seqlens=None if frames is None else frames.sum(-1),
        )  # [3, B, T], [B, 1]
        kwargs["position_ids"] = positions
        return media.MediaArguments(kwargs, offsets.to(input_ids.device, torch.long))


MULTIMODAL_INPUTS.add(FAMILY, OmniInputs)
