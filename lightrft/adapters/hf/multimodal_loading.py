"""Loading vision-language, audio-language and omni models and their media processors.

Nothing reaches the network (``local_files_only=True``), like :mod:`loading`.
Vision-language models load through ``AutoModelForImageTextToText`` (Qwen2-VL,
Qwen2.5-VL), audio-language ones through ``AutoModelForMultimodalLM`` (Qwen2-Audio), omni
ones too (a saved Qwen2.5-Omni thinker, ``model_type`` ``qwen2_5_omni_thinker``; the whole
Qwen2.5-Omni with its talker is refused). The image processor is the PIL backend
(``backend="pil"``): the torchvision one is not installable on CPU here, and both resize
within ``min_pixels`` / ``max_pixels``. A model reading images and audio keeps both
processors' settings in one ``preprocessor_config.json`` (:class:`MediaProcessors`).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, cast

import torch
from transformers import (
    AutoConfig,
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
    "omni": AutoModelForMultimodalLM,
}
_MODEL_TYPES: dict[str, frozenset[str]] = {  # modalities that take some families only
    "omni": frozenset({"qwen2_5_omni_thinker"}),
}


def load_multimodal_model(
    source: str | Path,
    modality: str,
    device: torch.device,
    params: ModelLoadParams | None = None,
) -> PreTrainedModel:
    """A ``modality`` ("vision-language", "audio-language", "omni") model from a local
    directory."""
    if modality not in _AUTO_CLASSES:
        raise ValueError(
            f"no multimodal loader for {modality!r}; use one of {sorted(_AUTO_CLASSES)}"
        )
    params = params or ModelLoadParams()
    check_attn_implementation(params.attn_implementation, device)
    src = resolve_source(source)
    check_model_type(src.name_or_path, modality, trust_remote_code=params.trust_remote_code)
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


def check_model_type(path: str, modality: str, *, trust_remote_code: bool = False) -> None:
    """Raises ``ValueError`` naming ``path``, its ``model_type`` and the accepted ones when
    ``modality`` takes some families only (omni: the Qwen2.5-Omni thinker) and the
    directory holds another."""
    accepted = _MODEL_TYPES.get(modality)
    if accepted is None:
        return
    config = AutoConfig.from_pretrained(
        path, local_files_only=True, trust_remote_code=trust_remote_code
    )
    if config.model_type not in accepted:
        raise ValueError(
            f"model.modality={modality} takes a model of type {', '.join(sorted(accepted))}, "
            f"but {path} holds model_type {config.model_type!r}; for a whole Qwen2.5-Omni "
            "checkpoint (thinker and talker) save its thinker alone "
            "(model.thinker.save_pretrained(dir)) and point model.path there"
        )


class MediaProcessors:
    """The media processors of a model that reads several media (image processor and
    feature extractor), saved together: both write ``preprocessor_config.json``, so their
    settings are merged into one file (what a released Qwen2.5-Omni holds), from which
    ``AutoImageProcessor`` and ``AutoFeatureExtractor`` each read their own part."""

    def __init__(self, image_processor: Any, feature_extractor: Any) -> None:
        self.image_processor = image_processor
        self.feature_extractor = feature_extractor

    def save_pretrained(self, directory: str | Path) -> None:
        """Writes every processor's files into ``directory``, merging JSON files they share."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        merged: dict[str, dict[str, Any]] = {}
        for processor in (self.feature_extractor, self.image_processor):
            with tempfile.TemporaryDirectory() as tmp:
                processor.save_pretrained(tmp)
                for file in sorted(Path(tmp).iterdir()):
                    if file.suffix == ".json":
                        merged.setdefault(file.name, {}).update(json.loads(file.read_text()))
                    else:
                        (directory / file.name).write_bytes(file.read_bytes())
        for name, content in merged.items():
            (directory / name).write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")


def load_media_processors(
    source: str | Path, *, min_pixels: int | None = None, max_pixels: int | None = None
) -> MediaProcessors:
    """The image processor (bounded as in :func:`load_image_processor`) and the feature
    extractor of a model that reads images and audio."""
    image = load_image_processor(source, min_pixels=min_pixels, max_pixels=max_pixels)
    return MediaProcessors(image, load_feature_extractor(source))
