"""The vision-language families (``model.modality=vision-language``), keyed by the
checkpoint's ``model_type``: how each loads its image processor and builds its prompt encoder.

Qwen2-VL and Qwen2.5-VL read images and videos through the Qwen2-VL image processor
(:mod:`~lightrft.adapters.hf.vision_language`); InternVL tiles images
(:mod:`~lightrft.adapters.hf.internvl`). Their forward arguments are registered apart, in
:data:`~lightrft.adapters.hf.multimodal_inputs.MULTIMODAL_INPUTS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

from lightrft.adapters.hf.checkpoint_modality import checkpoint_modality
from lightrft.adapters.hf.internvl import (
    InternVLEncoder,
    InternVLImageTiles,
    load_internvl_image_tiles,
)
from lightrft.adapters.hf.multimodal_loading import load_image_processor
from lightrft.adapters.hf.vision_language import VisionVideoEncoder
from lightrft.domain.registry import Registry


@dataclass(frozen=True)
class VisionFamily:
    """``load_processor(source, min_pixels=, max_pixels=)``: the family's image processor;
    ``encoder(tokenizer, processor)``: its prompt encoder; ``processor_type``: the class of
    what ``load_processor`` returns (an encoder is built for a processor by its type)."""

    load_processor: Callable[..., Any]
    encoder: Callable[[Any, Any], Any]
    processor_type: type


VISION_FAMILIES: Registry[VisionFamily] = Registry("vision-language model family")
_QWEN = VisionFamily(load_image_processor, VisionVideoEncoder, Qwen2VLImageProcessorPil)
VISION_FAMILIES.add("qwen2_vl", _QWEN)
VISION_FAMILIES.add("qwen2_5_vl", _QWEN)
VISION_FAMILIES.add(
    "internvl", VisionFamily(load_internvl_image_tiles, InternVLEncoder, InternVLImageTiles)
)


def vision_family(source: str | Path) -> VisionFamily:
    """The family of the checkpoint ``source`` (its ``config.json``'s ``model_type``);
    ``UnknownChoiceError`` naming the families for another type, ``ValueError`` when there
    is no ``config.json`` to read."""
    found = checkpoint_modality(source)
    if found is None:
        raise ValueError(f"{source}: no config.json to read the vision-language family from")
    return VISION_FAMILIES.get(found.family)


def vision_encoder(tokenizer: Any, processor: Any) -> Any:
    """The prompt encoder of the family whose processor ``processor`` is."""
    for name in VISION_FAMILIES.names():
        family = VISION_FAMILIES.get(name)
        if isinstance(processor, family.processor_type):
            return family.encoder(tokenizer, processor)
    raise ValueError(
        f"no vision-language family reads images with a {type(processor).__name__}; "
        f"the families are {', '.join(VISION_FAMILIES.names())}"
    )
