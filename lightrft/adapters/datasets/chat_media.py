"""Chats whose messages carry images and audio as content parts, and the expansion of their
placeholders in a tokenized row.

A message's ``content`` may be a list of parts (the Hugging Face / Qwen chat format):
``{"type": "text", "text": ...}``, ``{"type": "image", "image": VALUE}``,
``{"type": "audio", "audio": VALUE}``, ``{"type": "video", "video": VALUE}``, where VALUE
is any image or audio value of :mod:`~lightrft.adapters.datasets.multimodal_rows` (a video
one of :mod:`~lightrft.adapters.datasets.video_frames`) (a path relative to the data file's folder,
base64, bytes, an ``{"array", "sampling_rate"}`` clip ...). :func:`split_chat_media` decodes
the media (in chat order) and leaves bare ``{"type": "image"}`` / ``{"type": "audio"}`` parts
for the chat template, which renders each as the model's placeholder. Media belong to the
context: a part in an assistant message is a bad row (a trained token cannot be an image).

:func:`expand_row` then expands each placeholder of a tokenized row to the positions its item
occupies through the model's media encoder (``MediaExpander``, e.g.
:class:`~lightrft.adapters.hf.vision_language.VisionLanguageEncoder`), extending a per-token
flag list alongside (expanded placeholders are never trained).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from lightrft.adapters.datasets.bad_rows import BadRowError
from lightrft.adapters.datasets.multimodal_rows import load_audio, load_image
from lightrft.adapters.datasets.video_frames import FrameSampling, load_video

MEDIA_KINDS = {"image": "images", "audio": "audios", "video": "videos"}  # part type -> payload key


class MediaExpander(Protocol):
    """A model's media encoder, as far as row tokenization needs it."""

    media_key: str  # "images" / "audios" / "videos": the kind of media it takes
    noun: str

    @property
    def placeholder_id(self) -> int:
        """The placeholder token id of one item before expansion."""
        ...

    def item_ids(self, count: int) -> tuple[int, ...]:
        """The ids one item's placeholder becomes for ``count`` positions."""
        ...

    def encode_ids(
        self, ids: Sequence[int], items: list[Any], where: str, *, rest: dict[str, Any] | None
    ) -> tuple[tuple[int, ...], dict[str, Any]]:
        """Expanded ids and the payload of ``items`` (one placeholder each in ``ids``) plus
        ``rest`` (other media's payload)."""
        ...


class ChatMedia(NamedTuple):
    """A chat ready for the template (bare media parts) and its decoded media by kind."""

    chat: list[dict[str, Any]]
    media: dict[str, list[Any]]


def split_chat_media(
    chat: Sequence[Mapping[str, Any]],
    where: str,
    key: str,
    *,
    base_dir: Path | None = None,
    audio_rate: int | None = None,
    frame_sampling: FrameSampling | None = None,
) -> ChatMedia:
    """Decodes the media parts of ``chat`` (see the module docstring; video parts sampled by
    ``frame_sampling``, its defaults when None); :class:`BadRowError`."""
    out: list[dict[str, Any]] = []
    media: dict[str, list[Any]] = {}
    for i, message in enumerate(chat):
        content = message["content"]
        if not isinstance(content, list):
            out.append(dict(message))
            continue
        parts: list[dict[str, Any]] = []
        for j, part in enumerate(content):
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind not in MEDIA_KINDS:
                if kind != "text" or not isinstance(part.get("text"), str):
                    problem = (
                        f"message {i} part {j}: expected a text, image, video or audio part in"
                    )
                    raise BadRowError(where, key, problem)
                parts.append(dict(part))
                continue
            if message.get("role") == "assistant":
                problem = f"message {i} (assistant) holds an {kind} part; media go in user turns;"
                raise BadRowError(where, key, f"{problem} in")
            if part.get(kind) is None:
                raise BadRowError(where, key, f"message {i} part {j}: no {kind!r} value in")
            place = f"{key} message {i} part {j}"
            item: Any
            if kind == "image":
                item = load_image(part[kind], where=where, key=place, base_dir=base_dir)
            elif kind == "video":
                sampling = frame_sampling or FrameSampling()
                item = load_video(
                    part[kind], where=where, key=place, sampling=sampling, base_dir=base_dir
                )
            else:
                item = load_audio(
                    part[kind], where=where, key=place, base_dir=base_dir, rate=audio_rate
                )
            media.setdefault(MEDIA_KINDS[kind], []).append(item)
            parts.append({"type": kind})
        out.append({**message, "content": parts})
    return ChatMedia(out, media)


def media_expanders(expander: MediaExpander | None) -> tuple[MediaExpander, ...]:
    """The expander of each medium a model takes (``expander.expanders`` for a model reading
    several, e.g. images and videos; else ``expander`` alone; none for a text model)."""
    if expander is None:
        return ()
    parts = getattr(expander, "expanders", None)
    return tuple(parts) if parts else (expander,)


def expand_row(
    ids: Sequence[int],
    flags: Sequence[int],
    media: Mapping[str, list[Any]],
    expander: MediaExpander | None,
    where: str,
    key: str,
) -> tuple[list[int], list[int], dict[str, Any]]:
    """``ids`` and ``flags`` (one per token) with every placeholder expanded, and the media
    payload (``{}`` for a text row); :class:`BadRowError` when the model takes no such media
    or the placeholders do not match the items."""
    parts = media_expanders(expander)
    kinds = [kind for kind, items in media.items() if items]
    if not kinds and not any(part.placeholder_id in ids for part in parts):
        return list(ids), list(flags), {}
    takes = [part.media_key for part in parts]
    if not parts or any(kind not in takes for kind in kinds):
        said = "no media" if not parts else f"{', '.join(takes)} only"
        problem = f"the row has {', '.join(kinds)} but the model takes {said} (model.modality);"
        raise BadRowError(where, key, f"{problem} in")
    out_ids, out_flags, payload = list(ids), list(flags), {}
    for part in parts:
        items = media.get(part.media_key, [])
        if items or part.placeholder_id in out_ids:
            out_ids, out_flags, payload = _expand_medium(
                out_ids, out_flags, items, part, payload, where, key
            )
    return out_ids, out_flags, payload


def _expand_medium(
    ids: list[int],
    flags: list[int],
    items: list[Any],
    part: MediaExpander,
    payload: dict[str, Any],
    where: str,
    key: str,
) -> tuple[list[int], list[int], dict[str, Any]]:
    """One medium's placeholders expanded (its items checked against them), ``payload``
    (other media's) kept."""
    pad = part.placeholder_id
    found = ids.count(pad)
    if found != len(items):
        raise BadRowError(
            where,
            key,
            f"the rendered chat holds {found} {part.noun} placeholder token(s) but the row "
            f"has {len(items)} {part.noun} part(s) (placeholders typed into the text?); in",
        )
    expanded, payload = part.encode_ids(ids, items, where, rest=payload)
    counts = iter(payload[f"{part.noun}_tokens"])
    new_flags: list[int] = []
    for token, flag in zip(ids, flags, strict=True):
        new_flags.extend([0] * len(part.item_ids(next(counts))) if token == pad else [flag])
    return list(expanded), new_flags, payload


def cut_keeps_media(ids: Sequence[int], limit: int, expander: MediaExpander | None) -> bool:
    """Whether cutting ``ids`` to its first ``limit`` tokens keeps every media placeholder."""
    rest = ids[limit:]
    return not any(part.placeholder_id in rest for part in media_expanders(expander))
