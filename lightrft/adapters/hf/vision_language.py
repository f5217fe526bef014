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

import torch
from torch import Tensor, nn

from lightrft.adapters.hf.logprobs import position_ids_from_mask
from lightrft.adapters.hf.lora import LoraParams
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

IMAGE_PAD = "<|image_pad|>"


class VisionLanguageEncoder:
    """Expands image pads and processes images of prompt records (see the module doc).

    Args:
        tokenizer: the model's tokenizer (knows ``<|image_pad|>``).
        image_processor: the family's image processor (e.g. ``Qwen2VLImageProcessorPil``);
            its ``min_pixels`` / ``max_pixels`` bound every image's size.
    """

    def __init__(self, tokenizer: Any, image_processor: Any, *, image_token: str = IMAGE_PAD):
        self._processor = image_processor
        self._token = image_token
        self._pad = int(tokenizer.convert_tokens_to_ids(image_token))
        self._merge = int(getattr(image_processor, "merge_size", 2))

    @property
    def requirements(self) -> MediaRequirements:
        """One ``<|image_pad|>`` per image (before expansion)."""
        return MediaRequirements(image_placeholder=self._token)

    def encode(self, record: PromptRecord) -> PromptRecord:
        """``record`` with its images processed and pads expanded (text-only: unchanged)."""
        images = checked_media(record, "images", self._pad, "image")
        if not images:
            return record
        out = self._processor(images=images, return_tensors="pt")
        grid: Tensor = out["image_grid_thw"].long()  # [I, 3]
        counts = (grid.prod(-1) // self._merge**2).tolist()  # merged tokens per image
        ids = expand_placeholders(record.prompt_token_ids, self._pad, counts)
        payload: dict[str, Any] = {
            "pixel_values": out["pixel_values"],
            "image_grid_thw": grid,
            "image_tokens": tuple(counts),
            "where": str(record.metadata.get("where", record.uid)),
            COST_KEY: int(grid.prod(-1).sum()),
        }
        return replace(record, prompt_token_ids=ids, multimodal=payload)


class VisionLanguageInputs:
    """Forward arguments of a Qwen2-VL / Qwen2.5-VL model for rows with and without images."""

    def __init__(self, model: nn.Module) -> None:
        base = unwrapped(model)
        self._model = base
        self._image_token_id = int(base.config.image_token_id)
        pads = {self._image_token_id, int(getattr(base.config, "video_token_id", -1))} - {-1}
        self._suppressed = torch.tensor(sorted(pads), dtype=torch.long)

    @property
    def suppressed_token_ids(self) -> Tensor:
        """The image and video pad ids (never generated)."""
        return self._suppressed

    def model_inputs(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload]
    ) -> ModelInputs:
        """See :class:`~lightrft.adapters.hf.multimodal_inputs.MultimodalInputs`."""
        check_placeholders(input_ids, payloads, self._image_token_id, "image_tokens", "image")
        pixels = concat_payload_tensors(payloads, "pixel_values")  # [N, D]
        rows = input_ids.shape[0]
        kwargs: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask}
        if pixels is None:
            kwargs["position_ids"] = position_ids_from_mask(attention_mask)
            offsets = torch.zeros(rows, 1, dtype=torch.long, device=input_ids.device)
            return ModelInputs(kwargs, offsets)
        grid = concat_payload_tensors(payloads, "image_grid_thw")
        assert grid is not None
        grid = grid.to(input_ids.device)
        token_types = (input_ids == self._image_token_id).int()  # [B, T]
        positions, offsets = self._model.model.get_rope_index(
            input_ids=input_ids,
            mm_token_type_ids=token_types,
            image_grid_thw=grid,
            attention_mask=attention_mask,
        )  # [3, B, T], [B, 1]
        kwargs.update(
            position_ids=positions,
            pixel_values=pixels.to(input_ids.device, model_dtype(self._model)),
            image_grid_thw=grid,
            mm_token_type_ids=token_types,
        )
        return ModelInputs(kwargs, offsets.to(input_ids.device).long())


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
