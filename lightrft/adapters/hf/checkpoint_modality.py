"""What a model checkpoint reads besides text, from its ``config.json``.

A Qwen2-VL / Qwen2.5-VL / InternVL directory is a vision-language model, Qwen2-Audio an
audio-language one, Qwen2.5-Omni (whole, or its thinker saved alone) an omni one: its
``model_type`` says which, else one of its ``architectures``. Every other checkpoint, and a GGUF file (the
embedded default SmolLM2 included), is a text model. Only the JSON file is read: no model
class is imported, nothing reaches the network.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from lightrft.adapters.hf.loading import resolve_source

FAMILY_MODALITIES: dict[str, str] = {
    "qwen2_vl": "vision-language",
    "qwen2_5_vl": "vision-language",
    "internvl": "vision-language",
    "qwen2_audio": "audio-language",
    "qwen2_5_omni": "omni",
    "qwen2_5_omni_thinker": "omni",
}
"""``model_type`` -> the modality of its checkpoints (absent: text)."""

ARCHITECTURE_MODALITIES: dict[str, str] = {
    "Qwen2VLForConditionalGeneration": "vision-language",
    "Qwen2_5_VLForConditionalGeneration": "vision-language",
    "InternVLForConditionalGeneration": "vision-language",
    "Qwen2AudioForConditionalGeneration": "audio-language",
    "Qwen2_5OmniForConditionalGeneration": "omni",
    "Qwen2_5OmniThinkerForConditionalGeneration": "omni",
}
"""``architectures`` entries -> modality, for a config whose ``model_type`` is not listed."""

FAMILIES_OF: dict[str, str] = {
    "vision-language": "Qwen2-VL, Qwen2.5-VL or InternVL",
    "audio-language": "Qwen2-Audio",
    "omni": "Qwen2.5-Omni",
}
"""The checkpoint families each multimodal modality reads, for messages."""


@dataclass(frozen=True)
class CheckpointModality:
    """The modality of the checkpoint at ``path`` and what said so (``family``: its
    ``model_type``, ``gguf`` for a GGUF file)."""

    modality: str
    family: str
    path: str

    def describe(self) -> str:
        """``"PATH holds a text model (model_type 'llama')"``, for messages."""
        kind = f"{'an' if self.modality[0] in 'aeiou' else 'a'} {self.modality}"
        origin = "a GGUF file" if self.family == "gguf" else f"model_type {self.family!r}"
        return f"{self.path} holds {kind} model ({origin})"


def checkpoint_modality(source: str | Path) -> CheckpointModality | None:
    """The modality of the checkpoint ``source`` (a directory, hub-cache directory, repo id
    in the local cache or GGUF file); None when there is nothing to read there (no such
    path, no ``config.json``, a file that is not JSON)."""
    shown = str(source)
    if Path(source).suffix == ".gguf":
        return CheckpointModality("text", "gguf", shown)
    try:
        file = _config_file(str(resolve_source(source).name_or_path))
        config = json.loads(file.read_text(encoding="utf-8")) if file is not None else None
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    family = str(config.get("model_type") or "")
    modality = FAMILY_MODALITIES.get(family)
    if modality is None:
        architectures = config.get("architectures") or []
        found = [ARCHITECTURE_MODALITIES[a] for a in architectures if a in ARCHITECTURE_MODALITIES]
        modality = found[0] if found else "text"
    return CheckpointModality(modality, family or "unknown", shown)


def _config_file(name_or_path: str) -> Path | None:
    """The ``config.json`` of a model directory, or of a repo id in the local hub cache."""
    directory = Path(name_or_path)
    if directory.is_dir():
        return directory / "config.json"
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(name_or_path, "config.json")
    return Path(cached) if isinstance(cached, str) else None
