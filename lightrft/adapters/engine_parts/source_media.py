"""The media a prompt was encoded from, kept in its payload for engines that process media
themselves (vLLM takes raw images / waveforms plus one placeholder per item).

A prompt encoder (:class:`~lightrft.adapters.hf.media_builder.MediaEncoder`) expands each
placeholder of a record to the positions its item occupies and replaces the raw media by
model tensors. It also appends one :class:`SourceMedia` per kind to the payload's
:data:`SOURCE_MEDIA_KEY` entry: the kind's noun, the placeholder token id, the raw items and
the expanded count of each item, which is all an engine needs to collapse the expanded ids
back to one placeholder per item and hand over the items.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SOURCE_MEDIA_KEY = "source_media"


@dataclass(frozen=True)
class SourceMedia:
    """One kind of media of a prompt, as it was before encoding.

    Args:
        kind: ``"image"`` or ``"audio"`` (the encoder's noun).
        placeholder_id: the token id of one item's placeholder (``<|image_pad|>``,
            ``<|AUDIO|>``), repeated ``counts[i]`` times for item i in the encoded ids.
        items: the decoded items in prompt order (PIL images, ``(waveform, rate)`` pairs).
        counts: the positions each item occupies in the encoded ids.
    """

    kind: str
    placeholder_id: int
    items: tuple[Any, ...]
    counts: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.items) != len(self.counts):
            raise ValueError(
                f"{len(self.items)} {self.kind} item(s) but {len(self.counts)} position counts"
            )


def source_media(payload: Mapping[str, Any]) -> tuple[SourceMedia, ...]:
    """The raw media a payload was encoded from (``()`` for text rows)."""
    return tuple(payload.get(SOURCE_MEDIA_KEY, ())) if payload else ()


def with_source_media(payload: Mapping[str, Any], entry: SourceMedia) -> dict[str, Any]:
    """``payload`` with ``entry`` appended to its source media."""
    return {**payload, SOURCE_MEDIA_KEY: (*source_media(payload), entry)}
