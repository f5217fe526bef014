"""Loading vision-language and audio-language models and their media processors.

Nothing reaches the network (``local_files_only=True``), like :mod:`loading`.
Vision-language models load through ``AutoModelForImageTextToText`` (Qwen2-VL,
Qwen2.5-VL), audio-language ones through ``AutoModelForMultimodalLM`` (Qwen2-Audio). The
image processor is the PIL backend (``backend="pil"``): the torchvision one is not
installable on CPU here, and both resize within ``min_pixels`` / ``max_pixels``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import torch
from transformers import (
    AutoFeatureExtractor,
    AutoImageProcessor,
    AutoModelForImageTextToText,
    AutoModelForMultimodalLM,
    PreTrainedModel,
)

from lightrft.adapters.hf.loading import (
    DTYPES,
    ModelLoadParams,
    check_attn_implementation,
    enable_gradient_checkpointing,
    resolve_source,
)

_AUTO_CLASSES: dict[str, Any] = {
    "vision-language": AutoModelForImageTextToText,
    "audio-language": AutoModelForMultimodalLM,
}


def load_multimodal_model(
    source: str | Path,
    modality: str,
    device: torch.device,
    params: ModelLoadParams | None = None,
) -> PreTrainedModel:
    """A ``modality`` ("vision-language" or "audio-language") model from a local directory."""
    if modality not in _AUTO_CLASSES:
        raise ValueError(
            f"no multimodal loader for {modality!r}; use one of {sorted(_AUTO_CLASSES)}"
        )
    params = params or ModelLoadParams()
    check_attn_implementation(params.attn_implementation, device)
    src = resolve_source(source)
    model: PreTrainedModel = _AUTO_CLASSES[modality].from_pretrained(
        src.name_or_path,
        dtype=DTYPES[params.dtype],
        attn_implementation=params.attn_implementation,
        local_files_only=True,
        trust_remote_code=params.trust_remote_code,
    )
    if params.gradient_checkpointing:
        enable_gradient_checkpointing(model)
    cast(Any, model).to(device)
    return model


def load_image_processor(
    source: str | Path, *, min_pixels: int | None = None, max_pixels: int | None = None
) -> Any:
    """The model's image processor (PIL backend), bounded to ``[min_pixels, max_pixels]``."""
    kwargs: dict[str, Any] = {}
    if min_pixels is not None:
        kwargs["min_pixels"] = min_pixels
    if max_pixels is not None:
        kwargs["max_pixels"] = max_pixels
    src = resolve_source(source)
    processor = AutoImageProcessor.from_pretrained(  # type: ignore[no-untyped-call]
        src.name_or_path, backend="pil", local_files_only=True, **kwargs
    )
    if min_pixels is not None and max_pixels is not None and min_pixels > max_pixels:
        raise ValueError(f"min_pixels {min_pixels} exceeds max_pixels {max_pixels}")
    return processor


def load_feature_extractor(source: str | Path) -> Any:
    """The model's audio feature extractor (Whisper log-mel for Qwen2-Audio)."""
    src = resolve_source(source)
    return AutoFeatureExtractor.from_pretrained(  # type: ignore[no-untyped-call]
        src.name_or_path, local_files_only=True
    )
