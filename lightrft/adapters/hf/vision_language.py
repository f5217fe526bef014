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

Model inputs (:class:`VisionLanguageInputs`): pixels of all rows concatenated in row order,
``mm_token_type_ids`` (1 on image pads, else 0), and M-RoPE position ids (3, B, T) from
the model's own ``get_rope_index`` when some row has images (text-only batches get 1-D
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
from lightrft.domain.modality import Payload

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
    """Forward arguments of a Qwen2-VL / Qwen2.5-VL model for rows with and without images."""

    token_id_key, noun = "image_token_id", "image"
    token_keys, mrope = ("mm_token_type_ids",), True

    def placeholder_ids(self, config: Any) -> set[int]:
        """The image and video pad ids."""
        return {self._token_id, int(getattr(config, "video_token_id", -1))} - {-1}

    def media_arguments(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload]
    ) -> media.MediaArguments | None:
        """Pixels of all rows in row order, image token types and M-RoPE positions."""
        pixels = self.payload_tensor(payloads, "pixel_values", input_ids, features=True)
        if pixels is None:  # [N, D]
            return None
        grid = self.payload_tensor(payloads, "image_grid_thw", input_ids)
        assert grid is not None
        token_types = (input_ids == self._token_id).int()  # [B, T]
        positions, offsets = self._model.model.get_rope_index(
            input_ids=input_ids,
            mm_token_type_ids=token_types,
            image_grid_thw=grid,
            attention_mask=attention_mask,
        )  # [3, B, T], [B, 1]
        kwargs = {
            "position_ids": positions,
            "pixel_values": pixels,
            "image_grid_thw": grid,
            "mm_token_type_ids": token_types,
        }
        return media.MediaArguments(kwargs, offsets.to(input_ids.device).long())


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


def is_vision_module(name: str) -> bool:
    """Whether a parameter or module name belongs to the vision tower (``visual``)."""
    return name.startswith("visual.") or ".visual." in name


def freeze_vision_tower(model: nn.Module) -> int:
    """Turns off ``requires_grad`` of every vision-tower parameter; returns how many."""
    frozen = 0
    for name, param in model.named_parameters():
        if is_vision_module(name):
            param.requires_grad_(False)
            frozen += 1
    return frozen
