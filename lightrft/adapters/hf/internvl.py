"""InternVL (InternVL2.5 / InternVL3 in transformers' own layout, ``model_type`` ``internvl``):
prompts and model inputs.

Shape letters: B rows, T tokens, P image tiles (all images of a batch), I images.

Prompt building (:class:`InternVLEncoder`), as ``InternVLProcessor`` does it: the chat
template renders one ``<IMG_CONTEXT>`` per image; the image processor (``GotOcr2`` with the
PIL backend: no torchvision) cuts each image into tiles of the vision tower's input size
(the grid of at most ``max_patches`` tiles whose aspect ratio is closest to the image's, plus
a thumbnail of the whole image when there is more than one tile: ``crop_to_patches``, on by
default in ``InternVLProcessor``), giving ``pixel_values`` (P, 3, S, S); each placeholder
becomes ``<img>`` + ``tiles * tokens_per_tile`` ``<IMG_CONTEXT>`` + ``</img>``, where
``tokens_per_tile = (S / patch)**2 * downsample_ratio**2`` (256 for the released 448-pixel,
14-pixel-patch, 0.5 checkpoints): the features the vision tower and pixel shuffle give a tile.

Model inputs (:class:`InternVLInputs`): the tiles of all rows concatenated in row order (the
model fills the ``<IMG_CONTEXT>`` positions in order) and 1-D positions: InternVL's language
model has plain RoPE, so packing works as for text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from transformers import AutoConfig, AutoImageProcessor

from lightrft.adapters.hf import media_builder as media
from lightrft.adapters.hf.loading import resolve_source
from lightrft.adapters.hf.multimodal_inputs import MULTIMODAL_INPUTS, MediaRequirements
from lightrft.domain.modality import Payload
from lightrft.domain.types import PromptRecord

FAMILY = "internvl"  # config.model_type
IMAGE_CONTEXT = "<IMG_CONTEXT>"  # one per image in the rendered chat, tokens_per_tile per tile
IMAGE_START, IMAGE_END = "<img>", "</img>"  # around each image's context tokens
_OTHER_MEDIA = ("videos", "audios")  # raw media kinds of a record this family cannot read


@dataclass(frozen=True)
class InternVLImageTiles:
    """The image processor of an InternVL checkpoint and what one tile becomes in the model:
    ``tokens_per_tile`` language-model positions, ``patches_per_tile`` vision-tower patches
    (the cost of a tile)."""

    image_processor: Any
    tokens_per_tile: int
    patches_per_tile: int

    def save_pretrained(self, directory: str | Path) -> None:
        """Writes the image processor's ``preprocessor_config.json`` (the tile counts come
        from the model's ``config.json``)."""
        self.image_processor.save_pretrained(directory)


def tile_sizes(config: Any) -> tuple[int, int]:
    """(tokens, patches) per tile of an ``InternVLConfig``: the vision tower's
    ``(image_size / patch_size)**2`` patches, pixel-shuffled by ``downsample_ratio``."""
    vision = config.vision_config
    height, width = vision.image_size
    patch_h, patch_w = vision.patch_size
    patches = (height // patch_h) * (width // patch_w)
    return round(patches * config.downsample_ratio**2), patches


def load_internvl_image_tiles(
    source: str | Path, *, min_pixels: int | None = None, max_pixels: int | None = None
) -> InternVLImageTiles:
    """The image processor (PIL backend) of the InternVL checkpoint ``source`` and its tile
    sizes from ``config.json``. ``min_pixels`` / ``max_pixels`` (Qwen-VL's bounds) do not
    apply: the tiles are the processor's ``size`` and their number at most ``max_patches``.
    ``ValueError`` when the processor's tile is not the vision tower's input size."""
    del min_pixels, max_pixels  # the signature of every vision family's processor loader
    path = resolve_source(source).name_or_path
    config = AutoConfig.from_pretrained(path, local_files_only=True)
    processor = AutoImageProcessor.from_pretrained(  # type: ignore[no-untyped-call]
        path, backend="pil", local_files_only=True
    )
    tile = (int(processor.size["height"]), int(processor.size["width"]))
    expected = tuple(int(v) for v in config.vision_config.image_size)
    if tile != expected:
        raise ValueError(
            f"{path}: preprocessor_config.json cuts {tile[0]}x{tile[1]} tiles but the vision "
            f"tower of config.json takes {expected[0]}x{expected[1]} images "
            "(vision_config.image_size); set the processor's size to the tower's"
        )
    tokens, patches = tile_sizes(config)
    return InternVLImageTiles(processor, tokens, patches)


class InternVLEncoder(media.MediaEncoder):
    """Tiles the images of prompt records and expands their placeholders (module doc).

    Args:
        tokenizer: the checkpoint's tokenizer (knows ``<IMG_CONTEXT>``, ``<img>``, ``</img>``).
        tiles: the image processor and tile sizes (:func:`load_internvl_image_tiles`).
    """

    media_key, noun = "images", "image"

    def __init__(self, tokenizer: Any, tiles: InternVLImageTiles) -> None:
        vocab = tokenizer.get_vocab()
        missing = [t for t in (IMAGE_CONTEXT, IMAGE_START, IMAGE_END) if t not in vocab]
        if missing:
            raise ValueError(
                f"the tokenizer has no {', '.join(missing)} token(s); an InternVL checkpoint's "
                "tokenizer marks each image with <img>, <IMG_CONTEXT> ... </img>"
            )
        super().__init__(tokenizer, IMAGE_CONTEXT, tiles)
        self._tiles = tiles
        self._start, self._end = int(vocab[IMAGE_START]), int(vocab[IMAGE_END])

    @property
    def requirements(self) -> MediaRequirements:
        """One ``<IMG_CONTEXT>`` per image (before expansion)."""
        return MediaRequirements(image_placeholder=IMAGE_CONTEXT)

    def encode(self, record: PromptRecord) -> PromptRecord:
        """``record`` with its images tiled and placeholders expanded (text: unchanged);
        ``ValueError`` naming the row when it carries other media (videos, audio): InternVL
        reads images only here, and they would be dropped silently."""
        other = sorted(k for k, items in record.multimodal.items() if k in _OTHER_MEDIA and items)
        if other:
            where = record.metadata.get("where", record.uid)
            raise ValueError(
                f"{where}: the row has {', '.join(other)}, but an InternVL model takes images "
                "only here; drop those columns or use a family that reads them"
            )
        return super().encode(record)

    def process(self, items: list[Any], where: str) -> media.ProcessedMedia:
        """``pixel_values`` (P, 3, S, S) and ``image_tiles`` (I,); context tokens per image."""
        out = self._tiles.image_processor(images=items, crop_to_patches=True, return_tensors="pt")
        tiles = [int(n) for n in out["num_patches"]]  # per image
        counts = [n * self._tiles.tokens_per_tile for n in tiles]
        tensors = {"pixel_values": out["pixel_values"], "image_tiles": torch.tensor(tiles)}
        return media.ProcessedMedia(tensors, counts, sum(tiles) * self._tiles.patches_per_tile)

    def item_ids(self, count: int) -> tuple[int, ...]:
        """``<img>``, ``count`` ``<IMG_CONTEXT>``, ``</img>``."""
        return (self._start, *super().item_ids(count), self._end)


class InternVLInputs(media.MediaInputs):
    """Forward arguments of an InternVL model for rows with images or none: the tiles of all
    rows in row order; positions stay 1-D (text RoPE)."""

    token_id_key, noun = "image_token_id", "image"

    def media_arguments(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload]
    ) -> media.MediaArguments | None:
        """``pixel_values`` (P, 3, S, S) of all rows' tiles, or None without images."""
        pixels = self.payload_tensor(payloads, "pixel_values", input_ids, features=True)
        return None if pixels is None else media.MediaArguments({"pixel_values": pixels})


MULTIMODAL_INPUTS.add(FAMILY, InternVLInputs)
