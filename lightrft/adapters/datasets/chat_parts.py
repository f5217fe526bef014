"""Media parts of a prompt chat as other platforms write them, made the form
:mod:`~lightrft.adapters.datasets.chat_media` reads.

The original LightRFT (and verl) keep a clip in the prompt itself, e.g. R1-AQA's rows:
``{"role": "user", "content": [{"type": "audio", "audio_url": "clips/1.wav"},
{"type": "text", "text": "..."}]}``; OpenAI-style chats write
``{"type": "image_url", "image_url": {"url": ...}}``. Both become
``{"type": "audio", "audio": VALUE}`` / ``{"type": "image", "image": VALUE}``. Keys holding
``None`` are dropped first: a parquet or arrow table stores every part with the keys of all
parts (a text part then reads ``{"type": "text", "text": ..., "audio_url": None}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_URL_PARTS = {"audio_url": "audio", "image_url": "image"}  # part type of a URL-only part


def has_parts(chat: Sequence[Any]) -> bool:
    """Whether a message of ``chat`` has a list of content parts."""
    return any(isinstance(m, Mapping) and isinstance(m.get("content"), list) for m in chat)


def normalized_chat(chat: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``chat`` with its content parts in the form of the module docstring."""
    out = []
    for message in chat:
        content = message["content"]
        if isinstance(content, list):
            content = [_part(part) for part in content]
        out.append({**message, "content": content})
    return out


def _part(part: Any) -> Any:
    if not isinstance(part, Mapping):
        return part
    clean = {key: value for key, value in part.items() if value is not None}
    kind = clean.get("type")
    if kind in _URL_PARTS:  # {"type": "image_url", "image_url": {"url": ...}}
        kind = _URL_PARTS[kind]
        clean["type"] = kind
    if kind in ("audio", "image") and kind not in clean:
        url = clean.pop(f"{kind}_url", None)
        if isinstance(url, Mapping):
            url = url.get("url")
        if url is not None:
            clean[kind] = url
    return clean
