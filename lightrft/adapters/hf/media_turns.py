"""``HfMediaTurnRenderer``: observations with images for a vision-language policy.

A tool or environment may answer with pictures (``ChatMessage.images``: decoded images,
encoded bytes or file paths). For a Qwen2-VL / Qwen2.5-VL policy the observation is rendered
as :class:`~lightrft.adapters.hf.chat_turns.HfTurnRenderer` renders text, each image a
content part before the message's text, so the template writes one
``<|vision_start|><|image_pad|><|vision_end|>`` per image; the family's prompt encoder then
processes the images and expands each pad to the positions its merged patches fill, exactly
as for a prompt's images. The episode's media payload grows by the observation's
``pixel_values`` / ``image_grid_thw`` (in the order the pads appear in the row), so the next
turn's prefill and the training forward see every image of the context.

Every image is checked before it is processed (:func:`observation_image`): a known kind,
at most ``max_image_bytes`` encoded, decodable, at most ``max_image_pixels`` decoded; a
failure is an :class:`~lightrft.domain.agent.ObservationMediaError` naming the episode and
the image (the episode ends ``env_invalid``). The image processor then bounds each image's
positions by its ``max_pixels``.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from lightrft.adapters.engine_parts.source_media import SOURCE_MEDIA_KEY
from lightrft.adapters.hf.chat_turns import HfTurnRenderer
from lightrft.adapters.hf.vision_language import VisionLanguageEncoder
from lightrft.domain.agent import ChatMessage, ObservationMediaError, ToolSpec
from lightrft.domain.modality import COST_KEY, Payload, media_cost

MAX_IMAGE_BYTES = 8 * 2**20
MAX_IMAGE_PIXELS = 4096 * 4096
MAX_IMAGES = 8  # per observation


def observation_image(
    item: Any,
    where: str,
    *,
    max_bytes: int = MAX_IMAGE_BYTES,
    max_pixels: int = MAX_IMAGE_PIXELS,
) -> Image.Image:
    """``item`` (a PIL image, encoded image bytes or a path) as an RGB image; raises
    :class:`ObservationMediaError` naming ``where`` when it is of another kind, larger than
    ``max_bytes`` encoded or ``max_pixels`` decoded, or not an image."""
    if isinstance(item, Image.Image):
        image = item
    elif isinstance(item, bytes | bytearray | str | Path):
        size = len(item) if isinstance(item, bytes | bytearray) else _file_size(item, where)
        if size > max_bytes:
            raise ObservationMediaError(
                f"{where}: an image of {size} bytes, more than the {max_bytes} allowed"
            )
        source = io.BytesIO(item) if isinstance(item, bytes | bytearray) else Path(item)
        try:
            image = Image.open(source)
            _check_pixels(image, where, max_pixels)  # from the header, before decoding
            image.load()
        except (OSError, Image.DecompressionBombError, SyntaxError) as error:
            raise ObservationMediaError(f"{where}: not a readable image ({error})") from None
    else:
        raise ObservationMediaError(
            f"{where}: an observation image is a {type(item).__name__}; expected a PIL image, "
            "encoded image bytes or a file path"
        )
    _check_pixels(image, where, max_pixels)
    return image.convert("RGB")


def _check_pixels(image: Image.Image, where: str, max_pixels: int) -> None:
    if image.width * image.height > max_pixels:
        raise ObservationMediaError(
            f"{where}: an image of {image.width}x{image.height} pixels, more than the "
            f"{max_pixels} allowed"
        )


def _file_size(path: str | Path, where: str) -> int:
    try:
        return Path(path).stat().st_size
    except OSError as error:
        raise ObservationMediaError(f"{where}: image file {path} unreadable ({error})") from None


def appended_media(media: Payload, added: Payload) -> dict[str, Any]:
    """``media`` (the episode's payload so far, maybe empty) with ``added`` (the processed
    images of one observation) after it: tensors concatenated along dim 0, placeholder
    counts and costs added. The raw source media are dropped (they describe the prompt
    alone; engines that re-read them are not used with image observations)."""
    out: dict[str, Any] = {k: v for k, v in media.items() if k != SOURCE_MEDIA_KEY}
    for key, value in added.items():
        if key in (COST_KEY, "where", SOURCE_MEDIA_KEY):
            continue
        if isinstance(value, torch.Tensor):
            out[key] = torch.cat([out[key], value]) if key in out else value
        elif isinstance(value, tuple):
            out[key] = (*out.get(key, ()), *value)
        else:
            out[key] = value
    out["where"] = media.get("where", added.get("where"))
    out[COST_KEY] = media_cost(media) + media_cost(added)
    return out


class HfMediaTurnRenderer(HfTurnRenderer):
    """The ``MediaTurnRenderer`` port for Qwen2-VL / Qwen2.5-VL policies (see the module doc).

    Args:
        tokenizer: the policy's tokenizer, whose template renders image content parts.
        encoder: the family's image encoder (the run's prompt encoder).
        tools, chat_template: as :class:`HfTurnRenderer`.
        max_images: images of one observation.
        max_image_bytes, max_image_pixels: one image, encoded and decoded.
    """

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        encoder: VisionLanguageEncoder,
        *,
        tools: Sequence[ToolSpec] = (),
        chat_template: str | None = None,
        max_images: int = MAX_IMAGES,
        max_image_bytes: int = MAX_IMAGE_BYTES,
        max_image_pixels: int = MAX_IMAGE_PIXELS,
    ) -> None:
        super().__init__(tokenizer, tools=tools, chat_template=chat_template)
        self.encoder = encoder
        self.max_images = max_images
        self.max_image_bytes, self.max_image_pixels = max_image_bytes, max_image_pixels

    def observation_media(
        self,
        messages: Sequence[ChatMessage],
        generated: Sequence[int],
        media: Payload,
        where: str,
    ) -> tuple[tuple[int, ...], Payload]:
        """The observation's ids with its images' pads expanded, and ``media`` with its
        processed images appended."""
        items = [item for m in messages for item in m.images]
        if len(items) > self.max_images:
            raise ObservationMediaError(
                f"{where}: an observation with {len(items)} images, more than the "
                f"{self.max_images} allowed"
            )
        images = [
            observation_image(
                item,
                f"{where}, image {i}",
                max_bytes=self.max_image_bytes,
                max_pixels=self.max_image_pixels,
            )
            for i, item in enumerate(items)
        ]
        ids = self.tokenizer.encode(
            self.observation_text(messages, generated), add_special_tokens=False
        )
        pads = ids.count(self.encoder.placeholder_id)
        if pads != len(images):
            raise ObservationMediaError(
                f"{where}: the chat template wrote {pads} image placeholder(s) for "
                f"{len(images)} image(s); it must render image content parts"
            )
        expanded, added = self.encoder.encode_ids(ids, images, where)
        return expanded, appended_media(media, added)
