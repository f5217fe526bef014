"""Vision-language models of the Qwen2-VL / Qwen2.5-VL families: prompts and model inputs.

Shape letters: B rows, T tokens, N image patches (all images of a batch), D patch features
(channels x temporal patch x patch x patch), I images.

Prompt building (:class:`VisionLanguageEncoder`): the data layer renders the chat with the
tokenizer's chat template, one ``<|vision_start|><|image_pad|><|vision_end|>`` per image;
here the image processor turns the images into ``pixel_values`` (N, D) and
``image_grid_thw`` (I, 3), and each ``<|image_pad|>`` is expanded to
``t * h * w / spatial_merge_size**2`` pads, the positions the merged patches of that image
fill (what the family's processor does; the processor itself needs torchvision through its
video processor, so the expansion is done here).

Videos (:mod:`video_language`): ``<|video_pad|>`` placeholders, ``pixel_values_videos``,
``video_grid_thw`` and ``second_per_grid_ts``; :class:`VisionVideoEncoder` encodes both media.

Model inputs (:class:`VisionLanguageInputs`): pixels of all rows concatenated in row order
(images and videos apart), ``mm_token_type_ids`` (1 on image pads, 2 on video pads, else 0),
and M-RoPE position ids (3, B, T) from the model's own ``get_rope_index`` when some row has
images or videos (text-only batches get 1-D
positions counting attended tokens, which M-RoPE repeats on its three axes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from torch import Tensor, nn

from lightrft.adapters.hf import media_builder as media
from lightrft.adapters.hf.lora import LoraParams
from lightrft.adapters.hf.multimodal_inputs import MULTIMODAL_INPUTS, MediaRequirements
from lightrft.adapters.hf.video_language import VideoEncoder
from lightrft.domain.modality import Payload
from lightrft.domain.types import PromptRecord

IMAGE_PAD = "<|image_pad|>"


class VisionLanguageEncoder(media.MediaEncoder):
    """Expands image pads and processes images of prompt records (see the module doc).

    Args:
        tokenizer: the model's tokenizer (knows ``<|image_pad|>``).
        image_processor: the family's image processor (e.g. ``Qwen2VLImageProcessorPil``);
            its ``min_pixels`` / ``max_pixels`` bound every image's size.
    """

    media_key, noun = "images", "image"

    def __init__(self, tokenizer: Any, image_processor: Any, *, image_token: str = IMAGE_PAD):
        super().__init__(tokenizer, image_token, image_processor)
        self._merge = int(getattr(image_processor, "merge_size", 2))

    @property
    def requirements(self) -> MediaRequirements:
        """One ``<|image_pad|>`` per image (before expansion)."""
        return MediaRequirements(image_placeholder=self._token)

    def process(self, items: list[Any], where: str) -> media.ProcessedMedia:
        """``pixel_values`` (N, D) and ``image_grid_thw`` (I, 3); merged patches per image."""
        out = self._processor(images=items, return_tensors="pt")
        grid: Tensor = out["image_grid_thw"].long()  # [I, 3]
        counts = (grid.prod(-1) // self._merge**2).tolist()  # merged tokens per image
        tensors = {"pixel_values": out["pixel_values"], "image_grid_thw": grid}
        return media.ProcessedMedia(tensors, counts, int(grid.prod(-1).sum()))


class VisionLanguageInputs(media.MediaInputs):
    """Forward arguments of a Qwen2-VL / Qwen2.5-VL model for rows with images, videos, both
    or neither."""

    token_id_key, noun = "image_token_id", "image"
    token_keys, mrope = ("mm_token_type_ids",), True

    def __init__(self, model: nn.Module) -> None:
        super().__init__(model)
        video = getattr(self._model.config, "video_token_id", None)
        self._video_id = None if video is None else int(video)

    def placeholder_ids(self, config: Any) -> set[int]:
        """The image and video pad ids."""
        return {self._token_id, int(getattr(config, "video_token_id", -1))} - {-1}

    def check_rows(self, input_ids: Tensor, payloads: Sequence[Payload]) -> None:
        """Image and video placeholder counts of every row."""
        super().check_rows(input_ids, payloads)
        if self._video_id is not None:
            media.check_placeholders(input_ids, payloads, self._video_id, "video_tokens", "video")

    def media_arguments(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload]
    ) -> media.MediaArguments | None:
        """Pixels of all rows' images and videos in row order, token types (1 image pad,
        2 video pad) and M-RoPE positions (videos' time axis scaled by
        ``second_per_grid_ts`` on Qwen2.5-VL)."""
        pixels = self.payload_tensor(payloads, "pixel_values", input_ids, features=True)
        frames = self.payload_tensor(payloads, "pixel_values_videos", input_ids, features=True)
        if pixels is None and frames is None:  # [N, D], [M, D]
            return None
        grid = self.payload_tensor(payloads, "image_grid_thw", input_ids)  # [I, 3]
        video_grid = self.payload_tensor(payloads, "video_grid_thw", input_ids)  # [V, 3]
        seconds = self.payload_tensor(payloads, "second_per_grid_ts", input_ids)  # [V]
        token_types = (input_ids == self._token_id).int()  # [B, T]
        if self._video_id is not None:
            token_types = token_types + 2 * (input_ids == self._video_id).int()
        positions, offsets = self._model.model.get_rope_index(
            input_ids=input_ids,
            mm_token_type_ids=token_types,
            image_grid_thw=grid,
            video_grid_thw=video_grid,
            second_per_grid_ts=seconds,
            attention_mask=attention_mask,
        )  # [3, B, T], [B, 1]
        kwargs: dict[str, Any] = {"position_ids": positions, "mm_token_type_ids": token_types}
        if pixels is not None:
            kwargs.update(pixel_values=pixels, image_grid_thw=grid)
        if frames is not None:
            kwargs.update(pixel_values_videos=frames, video_grid_thw=video_grid)
        return media.MediaArguments(kwargs, offsets.to(input_ids.device).long())


class VisionVideoEncoder(VisionLanguageEncoder):
    """The prompt encoder of a Qwen2-VL / Qwen2.5-VL run: images as
    :class:`VisionLanguageEncoder` (whose ``media_key`` / placeholder it keeps, so SFT and
    reward-model rows, which take images, read as before), then videos through
    :class:`~lightrft.adapters.hf.video_language.VideoEncoder` with the same processor."""

    def __init__(self, tokenizer: Any, image_processor: Any) -> None:
        super().__init__(tokenizer, image_processor)
        self._video = VideoEncoder(tokenizer, image_processor)

    @property
    def requirements(self) -> MediaRequirements:
        """One ``<|image_pad|>`` per image and one ``<|video_pad|>`` per video."""
        video = self._video.requirements.video_placeholder
        return replace(super().requirements, video_placeholder=video)

    @property
    def expanders(self) -> tuple[media.MediaEncoder, ...]:
        """The encoder of each medium, images first (SFT rows expand each in turn)."""
        return (self, self._video)

    def encode(self, record: PromptRecord) -> PromptRecord:
        """``record`` with its images, then its videos, processed and expanded."""
        return self._video.encode(super().encode(record))


for _family in ("qwen2_vl", "qwen2_5_vl"):
    MULTIMODAL_INPUTS.add(_family, VisionLanguageInputs)


def language_model_lora(model: nn.Module, params: LoraParams, *, train_vision: bool) -> LoraParams:
    """``params`` targeting the linear layers of the language model by full name (and of the
    vision tower too when ``train_vision``); the output head is never adapted."""
    names = tuple(
        name
        for name, module in model.named_modules()
        if isinstance(module, nn.Linear)
        and "lm_head" not in name
        and (train_vision or not is_vision_module(name))
    )
    return replace(params, target_modules=names)


VISION_MODULES = ("visual", "vision_tower", "multi_modal_projector")
"""Submodules that read images: Qwen-VL's ``visual`` (tower and merger), InternVL's
``vision_tower`` and ``multi_modal_projector``."""


def is_vision_module(name: str) -> bool:
    """Whether a parameter or module name belongs to the vision tower (:data:`VISION_MODULES`)."""
    return any(name.startswith(f"{m}.") or f".{m}." in name for m in VISION_MODULES)


def freeze_vision_tower(model: nn.Module) -> int:
    """Turns off ``requires_grad`` of every vision-tower parameter; returns how many."""
    frozen = 0
    for name, param in model.named_parameters():
        if is_vision_module(name):
            param.requires_grad_(False)
            frozen += 1
    return frozen
