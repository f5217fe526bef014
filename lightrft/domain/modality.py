"""Modalities and the opaque per-sample multimodal payload.

A run trains a model of one :class:`Modality`. Services never look inside a payload and
never branch on model names: a :class:`~lightrft.domain.types.PromptRecord` carries its
payload (``multimodal``, a mapping only adapters interpret), batching hands one payload per
sample to :class:`~lightrft.domain.types.SequenceBatch` (``multimodal``, a tuple aligned with
the rows), and the adapters of the run's modality turn payloads into model inputs
(``pixel_values``, ``image_grid_thw``, ``mm_token_type_ids``, ``input_features``,
``feature_attention_mask`` ...).

Keys every payload may hold, so that domain functions (e.g. balanced batching) can read a
sample's cost without knowing the model: :data:`COST_KEY` (int, the number of model
positions the media occupy beyond the text, e.g. image patches).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

Payload = Mapping[str, Any]
COST_KEY = "media_cost"


class Modality(str, Enum):
    """What a model reads besides text. The value is the config name (``model.modality``);
    ``"language"`` is accepted for ``"text"``."""

    TEXT = "text"
    VISION_LANGUAGE = "vision-language"
    AUDIO_LANGUAGE = "audio-language"
    OMNI = "omni"  # images and audio (Qwen2.5-Omni thinker)

    @classmethod
    def parse(cls, name: str) -> Modality:
        """The modality called ``name``; raises ``ValueError`` naming the valid ones."""
        try:
            return cls("text" if name == "language" else name)
        except ValueError:
            valid = ", ".join(m.value for m in cls)
            raise ValueError(f"unknown modality {name!r}; expected one of: {valid}") from None


def batch_payloads(payloads: Sequence[Payload], rows: int) -> tuple[Payload, ...]:
    """The per-row payloads of a batch of ``rows`` samples: ``()`` when every one is empty.

    Raises ``ValueError`` when a non-empty list does not have one payload per row.
    """
    out = tuple(payloads)
    if not any(out):
        return ()
    if len(out) != rows:
        raise ValueError(f"multimodal has {len(out)} payloads for {rows} rows; need one per row")
    return out


def media_cost(payload: Payload) -> int:
    """The model positions a sample's media occupy (0 for text-only samples)."""
    return int(payload.get(COST_KEY, 0)) if payload else 0


@dataclass(frozen=True)
class VideoFrames:
    """One decoded, sampled video of a prompt record's ``multimodal["videos"]``: its frames
    (images of one size, opaque here; the data layer decodes them, the model's encoder
    processes them) and their rate in frames a second (M-RoPE's time axis is scaled by it)."""

    frames: tuple[Any, ...]
    fps: float

    def __post_init__(self) -> None:
        if not self.frames:
            raise ValueError("a video needs at least one frame")
        if not self.fps > 0:
            raise ValueError(f"a video's fps must be positive, got {self.fps}")
