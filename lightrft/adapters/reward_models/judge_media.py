"""The media of a row a generative judge reads, and the judge prompt that carries them.

A vision- or audio-language judge (:class:`~lightrft.adapters.reward_models.generative.
HfGenerativeRewardModel` given the judge model's prompt encoder) sees the row's own items:
the raw items an encoded prompt kept (:mod:`~lightrft.adapters.engine_parts.source_media`), or the
raw ``images`` / ``audios`` of a record not encoded yet. The judge prompt is one user message
whose content is one ``{"type": kind}`` part per item, then the filled template; the judge's
chat template renders each part as one placeholder, and the judge's encoder expands it to the
count the judge's processor gives (the policy's expanded ids are never reused). The
policy's own media markup in ``{prompt}`` (the same judge markup, when the families match)
is removed from the text first, so every item has exactly one placeholder.

A judge without an encoder refuses a row with media (``ValueError`` naming the row), unless
it was told to judge the text only.
"""

from __future__ import annotations

from typing import Any

from lightrft.adapters.engine_parts.media_markup import media_markup
from lightrft.adapters.engine_parts.source_media import source_media
from lightrft.domain.types import PromptRecord

__all__ = ["MEDIA_KINDS", "media_markup", "media_message", "row_media", "row_where"]

MEDIA_KINDS = ("image", "video", "audio")  # a kind's records key: its plural ("images" ...)


def row_media(record: PromptRecord) -> dict[str, list[Any]]:
    """``{kind: items}`` of ``record``'s media in prompt order (``{}`` for a text row)."""
    media: dict[str, list[Any]] = {}
    for entry in source_media(record.multimodal):
        media.setdefault(entry.kind, []).extend(entry.items)
    for kind in MEDIA_KINDS:
        raw = record.multimodal.get(f"{kind}s") if record.multimodal else None
        if raw and kind not in media:
            media[kind] = list(raw)
    return media


def row_where(record: PromptRecord) -> str:
    """The row's name in errors (its ``where``, else its uid)."""
    return str(record.metadata.get("where", record.uid))


def media_message(text: str, media: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """One user message: a ``{"type": kind}`` part per item, then ``text``."""
    parts: list[dict[str, Any]] = [{"type": k} for k, items in media.items() for _ in items]
    return [{"role": "user", "content": [*parts, {"type": "text", "text": text}]}]
