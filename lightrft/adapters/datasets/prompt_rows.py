"""From raw rows (dicts) to prepared prompts: keys, bad rows, rendering, length bounds.

Shared by every prompt source of this package. A row is read through a :class:`RowSpec`
(which keys hold the prompt, the reference and the images; an optional preprocessor that
maps a raw row to one with those keys first). A row whose prompt is missing, empty or of the
wrong type (a chat: see :mod:`~lightrft.adapters.datasets.chat_check`), or whose reference
is missing or neither a string nor a number, is a bad row: an error naming the file, the row
and the key (``on_bad_row="error"``: one error lists every bad row, see
:mod:`~lightrft.adapters.datasets.bad_rows`), or skipped and counted (``"skip"``). So is a row
whose media cannot be read, or (with ``RowSpec.placeholders``) whose rendered prompt does not
hold one model placeholder token per media item (saying so when truncation cut one off),
or whose prompt is longer than ``max_prompt_tokens`` under ``on_overlong="error"``: all
found here, while the source is built.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from lightrft.adapters.datasets.bad_rows import (  # BadRowError, BadRowPolicy re-exported
    BadRowError as BadRowError,
)
from lightrft.adapters.datasets.bad_rows import BadRowPolicy as BadRowPolicy
from lightrft.adapters.datasets.bad_rows import BadRows
from lightrft.adapters.datasets.chat_check import check_chat
from lightrft.adapters.datasets.chat_media import ChatMedia, split_chat_media
from lightrft.adapters.datasets.chat_parts import has_parts, normalized_chat
from lightrft.adapters.datasets.multimodal_rows import (
    as_list,
    load_audio,
    load_image,
    media_content,
)
from lightrft.adapters.datasets.placeholders import MediaPlaceholders, PlaceholderCheck
from lightrft.adapters.datasets.rendering import Content, PromptRenderer, PromptTooLongError
from lightrft.adapters.datasets.video_frames import IMAGE_SUFFIXES, FrameSampling, load_video
from lightrft.domain.modality import VideoFrames
from lightrft.domain.reward_recipes import LABEL_KEY
from lightrft.domain.row_metadata import PROMPT_CONTENT_KEY, ROW_COLUMNS_KEY
from lightrft.domain.types import PromptRecord

RowPreprocessor = Callable[[Mapping[str, Any]], Mapping[str, Any]]


@dataclass(frozen=True)
class RowSpec:
    """Where a row keeps its prompt, reference and media, and what to do with bad rows.

    ``input_key`` holds a string (the user message) or a list of chat messages;
    ``reference_key`` the verifiable answer (``None``: the rows have none); ``images_key``
    one image or a list of them, ``audios_key`` one audio clip or a list (formats in
    :mod:`~lightrft.adapters.datasets.multimodal_rows`; an empty list: a text-only row),
    decoded into ``PromptRecord.multimodal`` as ``{"images": [PIL images]}`` /
    ``{"audios": [(waveform, rate)]}`` and rendered as chat content parts;
    ``audio_sampling_rate`` the rate every clip must have (None: any); ``videos_key`` one
    video or a list (:mod:`~lightrft.adapters.datasets.video_frames`: a file, a frame folder
    or a frame list), sampled by ``frame_sampling`` into ``{"videos": [VideoFrames]}``; a
    row with more than ``max_videos`` videos (None: any) is a bad row.
    ``preprocess`` maps a raw row to one with these keys (e.g. GSM8K question/answer).
    ``placeholders``: the model's media placeholder tokens; when set, a row whose rendered
    prompt does not hold exactly one per media item is a bad row (:mod:`placeholders`).

    The original LightRFT's (and verl's) layout is read too: a row without ``reference_key``
    (or with it null) takes its reference from ``extra_info.reference``, else from
    ``reward_model.ground_truth``; ``label_key`` names the row's reward-recipe label, looked
    up at the top level, then in ``extra_info`` (kept as ``metadata["label"]``; a row without
    one has none); a chat's media may sit in its messages as content parts
    (:mod:`chat_parts`, e.g. ``{"type": "audio", "audio_url": PATH}``).
    """

    input_key: str = "prompt"
    reference_key: str | None = "reference"
    images_key: str | None = None
    on_bad_row: BadRowPolicy = "error"
    preprocess: RowPreprocessor | None = None
    audios_key: str | None = None
    audio_sampling_rate: int | None = None
    placeholders: MediaPlaceholders = MediaPlaceholders()
    label_key: str | None = None
    videos_key: str | None = None
    frame_sampling: FrameSampling = FrameSampling()
    max_videos: int | None = None

    @property
    def has_media(self) -> bool:
        """Whether rows carry images, audio or videos."""
        return any(key is not None for key in (self.images_key, self.audios_key, self.videos_key))

    def __post_init__(self) -> None:
        if self.on_bad_row not in ("error", "skip"):
            raise ValueError(f"on_bad_row must be error or skip, got {self.on_bad_row!r}")


@dataclass(frozen=True)
class DatasetStats:
    """What preparing a source did: rows read, kept, skipped as bad, dropped or truncated
    for length (``truncated_tokens`` in total)."""

    rows: int
    kept: int
    skipped_bad_rows: int = 0
    dropped_overlong: int = 0
    truncated: int = 0
    truncated_tokens: int = 0


@dataclass(frozen=True)
class RowRef:
    """One raw row and where it comes from (``where`` is e.g. ``"train.jsonl row 3"``)."""

    uid: str
    where: str
    row: Mapping[str, Any]
    position: Any = None  # how the owning source finds the row again (multimodal reads)
    base_dir: Path | None = None  # relative media paths start here (the data file's folder)


def _prepared_row(row: Mapping[str, Any], spec: RowSpec, where: str) -> Mapping[str, Any]:
    if spec.preprocess is None:
        return row
    try:
        return spec.preprocess(row)
    except KeyError as error:
        raise BadRowError(where, str(error.args[0]), "missing key") from None


def _required(row: Mapping[str, Any], key: str, where: str) -> Any:
    """``row[key]``; a missing key and a null value are told apart."""
    if key not in row:
        raise BadRowError(where, key, "missing key")
    value = row[key]
    if value is None:
        # JSON null, or absent from this row while other rows have it (the table fills in
        # null): either way this row has no value
        raise BadRowError(where, key, "no value (null or absent in this row) for key")
    return value


class RowContent(NamedTuple):
    """What a row holds: its prompt content, its reference, its media items by kind
    (``{"images": 2}``; empty for a text-only row), its recipe label, whether media sit
    in its chat's content parts, and what it held as written (its prompt and its other
    columns, kept in ``PromptRecord.metadata`` for reward functions written for verl or TRL:
    :mod:`lightrft.domain.row_metadata`)."""

    content: Content
    reference: str | None
    media_items: dict[str, int]
    label: str | None = None
    media_in_chat: bool = False
    written: Mapping[str, Any] = {}


_REFERENCE_FALLBACKS = (("extra_info", "reference"), ("reward_model", "ground_truth"))


def _reference(row: Mapping[str, Any], key: str, where: str) -> tuple[str, Any]:
    """(the key read, its value): ``row[key]``, else the original layout's places
    (:data:`_REFERENCE_FALLBACKS`); a missing or null value is an error naming ``key``."""
    if row.get(key) is None:
        for outer, inner in _REFERENCE_FALLBACKS:
            nested = row.get(outer)
            if isinstance(nested, Mapping) and nested.get(inner) is not None:
                return f"{outer}.{inner}", nested[inner]
    return key, _required(row, key, where)


def _label(row: Mapping[str, Any], key: str | None, where: str) -> str | None:
    """The row's recipe label: ``row[key]``, else ``row["extra_info"][key]``; None if absent."""
    if key is None:
        return None
    value = row.get(key)
    extra = row.get("extra_info")
    if value is None and isinstance(extra, Mapping):
        value = extra.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise BadRowError(
            where, key, f"expected a label string, got {type(value).__name__}, for key"
        )
    return str(value)


def _chat_media(content: Content, ref: RowRef, spec: RowSpec) -> ChatMedia | None:
    """The chat with bare media parts and its decoded media, when its messages hold parts."""
    if isinstance(content, str) or not has_parts(content):
        return None
    return split_chat_media(
        normalized_chat(content),
        ref.where,
        spec.input_key,
        base_dir=ref.base_dir,
        audio_rate=spec.audio_sampling_rate,
        frame_sampling=spec.frame_sampling,
    )


def read_content(ref: RowRef, spec: RowSpec) -> RowContent:
    """The prompt content, reference and media counts of a row (its media decoded once, so
    an unreadable file or a wrong sampling rate is found here); raises :class:`BadRowError`."""
    row = _prepared_row(ref.row, spec, ref.where)
    content = _required(row, spec.input_key, ref.where)
    if isinstance(content, list):
        if not content:
            raise BadRowError(ref.where, spec.input_key, "empty chat in")
        check_chat(content, ref.where, spec.input_key)
    elif not isinstance(content, str):
        raise BadRowError(
            ref.where,
            spec.input_key,
            f"expected a string or a list of chat messages, got {type(content).__name__}, in",
        )
    elif not content.strip():
        raise BadRowError(ref.where, spec.input_key, "empty prompt in")
    reference = None
    if spec.reference_key is not None:
        read_key, value = _reference(row, spec.reference_key, ref.where)
        if isinstance(value, str) and not value.strip():
            raise BadRowError(ref.where, read_key, "empty value for key")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            problem = f"expected a string or a number, got {type(value).__name__}, for key"
            raise BadRowError(ref.where, read_key, problem)
        reference = str(value)
    label = _label(row, spec.label_key, ref.where)
    items: dict[str, int] = {}
    in_chat = _chat_media(content, ref, spec)
    if in_chat is not None:
        content = in_chat.chat
        items = {kind: len(values) for kind, values in in_chat.media.items() if values}
    if spec.has_media:
        media = _read_media(row, ref, spec)
        counts = {kind: len(values) for kind, values in media.items()}
        images, audios = counts.get("images", 0), counts.get("audios", 0)
        videos = counts.get("videos", 0)
        if images or audios or videos:
            key = spec.images_key if images else spec.videos_key if videos else spec.audios_key
            content = media_content(content, images, audios, ref.where, str(key), videos=videos)
        for kind, count in counts.items():
            items[kind] = items.get(kind, 0) + count
    media_keys = {spec.input_key, spec.images_key, spec.audios_key, spec.videos_key}
    written = {
        PROMPT_CONTENT_KEY: row[spec.input_key],
        ROW_COLUMNS_KEY: {key: value for key, value in row.items() if key not in media_keys},
    }
    media_in_chat = bool(in_chat and in_chat.media)
    return RowContent(content, reference, items, label, media_in_chat, written)


def _read_media(row: Mapping[str, Any], ref: RowRef, spec: RowSpec) -> dict[str, Any]:
    """The decoded images / audio clips / videos of ``row`` (keys with no items are left
    out)."""
    media: dict[str, Any] = {}
    kinds = ((spec.images_key, "images"), (spec.audios_key, "audios"), (spec.videos_key, "videos"))
    for key, name in kinds:
        if key is None:
            continue
        value = _required(row, key, ref.where)
        if name == "videos":
            values = _videos(value)
            if spec.max_videos is not None and len(values) > spec.max_videos:
                problem = f"{len(values)} videos, more than max_videos ({spec.max_videos}), in"
                raise BadRowError(ref.where, key, problem)
            items: list[Any] = [
                load_video(
                    v, where=ref.where, key=key, sampling=spec.frame_sampling, base_dir=ref.base_dir
                )
                for v in values
            ]
        elif name == "images":
            items = [
                load_image(v, where=ref.where, key=key, base_dir=ref.base_dir)
                for v in as_list(value)
            ]
        else:
            items = [
                load_audio(
                    v,
                    where=ref.where,
                    key=key,
                    base_dir=ref.base_dir,
                    rate=spec.audio_sampling_rate,
                )
                for v in as_list(value)
            ]
        if items:
            media[name] = items
    return media


def _videos(value: Any) -> list[Any]:
    """A row's videos: one video (a path, a ``{"frames"}`` / ``{"path"}`` mapping) or a
    list of them; a list whose first item is a frame (not a video) is one frame list."""
    if isinstance(value, list) and value and not _is_video(value[0]):
        return [value]
    return as_list(value)


def _is_video(value: Any) -> bool:
    """Whether ``value`` is a whole video rather than one frame: a frame list, a mapping with
    frames or a path, a path without an image suffix (a file or a frame folder)."""
    if isinstance(value, (list, tuple, VideoFrames)):
        return True
    if isinstance(value, Mapping):  # {"frames"}, {"path", "fps"}; an HF Image is a frame
        if "frames" in value or "fps" in value:
            return True
        return not value.get("bytes") and _is_video(value.get("path"))
    if isinstance(value, os.PathLike) or (
        isinstance(value, str) and not value.startswith("data:") and len(value) < 4096
    ):
        return Path(value).suffix.lower() not in IMAGE_SUFFIXES
    return False


def multimodal_of(ref: RowRef, spec: RowSpec) -> dict[str, Any]:
    """The row's decoded media (``{"images": [...]}``, ``{"audios": [...]}``), or ``{}``:
    those of its chat's content parts, then those of ``images_key`` / ``audios_key``."""
    row = _prepared_row(ref.row, spec, ref.where)
    content = row.get(spec.input_key)
    in_chat = _chat_media(content, ref, spec) if isinstance(content, list) else None
    media: dict[str, Any] = {} if in_chat is None else dict(in_chat.media)
    if spec.has_media:
        for kind, items in _read_media(row, ref, spec).items():
            media[kind] = [*media.get(kind, []), *items]
    return media


@dataclass(frozen=True)
class PreparedPrompt:
    """A row that made it: its record (without multimodal data) and its origin."""

    record: PromptRecord
    position: Any
    media_in_chat: bool = False  # media sit in the chat's content parts (read on access)


def prepare_prompts(
    rows: Iterable[RowRef], renderer: PromptRenderer, spec: RowSpec, source: str
) -> tuple[list[PreparedPrompt], DatasetStats]:
    """Reads, renders, tokenizes and bounds ``rows`` (see the module docstring)."""
    read: list[tuple[RowRef, str, RowContent]] = []  # row, rendered text, content
    total, bad = 0, BadRows(spec.on_bad_row)
    for ref in rows:
        total += 1
        try:
            row = read_content(ref, spec)
        except BadRowError as error:
            bad.add(error)
            continue
        read.append((ref, renderer.text(row.content), row))
    token_ids = renderer.tokenize([text for _, text, _ in read])
    keys = {"images": spec.images_key, "audios": spec.audios_key, "videos": spec.videos_key}
    placeholders = PlaceholderCheck(spec.placeholders, renderer.tokenizer, keys)
    prepared: list[PreparedPrompt] = []
    dropped = truncated = truncated_tokens = 0
    for (ref, text, row), ids in zip(read, token_ids, strict=True):
        uid, where, position, reference = ref.uid, ref.where, ref.position, row.reference
        try:
            fitted = renderer.fit(text, ids)
        except PromptTooLongError as error:
            bad.add(BadRowError(where, spec.input_key, f"{error} (truncate=error) in"))
            continue
        if fitted is None:
            dropped += 1
            continue
        try:  # after truncation: a placeholder cut off no longer matches its item
            placeholders.check(fitted.token_ids, row.media_items, where, spec.input_key)
        except BadRowError as error:
            bad.add(_cut_by_truncation(error, fitted.truncated_tokens, renderer))
            continue
        truncated += fitted.truncated_tokens > 0
        truncated_tokens += fitted.truncated_tokens
        metadata = {"source": source, "where": where, "truncated_tokens": fitted.truncated_tokens}
        metadata.update(row.written)
        if row.label is not None:
            metadata[LABEL_KEY] = row.label
        record = PromptRecord(
            uid=uid,
            prompt_text=fitted.text,
            prompt_token_ids=fitted.token_ids,
            reference=reference,
            metadata=metadata,
        )
        prepared.append(PreparedPrompt(record, position, row.media_in_chat))
    skipped = bad.check()  # every bad row named at once (error mode), or counted
    stats = DatasetStats(total, len(prepared), skipped, dropped, truncated, truncated_tokens)
    return prepared, stats


def _cut_by_truncation(error: BadRowError, cut: int, renderer: PromptRenderer) -> BadRowError:
    """``error`` of a placeholder check, saying when truncation is what cut the placeholder."""
    if not cut:
        return error
    limit = renderer.format.max_prompt_tokens
    return BadRowError(
        error.where,
        error.key,
        f"the prompt was cut by {cut} tokens to max_prompt_length ({limit}, truncate="
        f"{renderer.format.on_overlong}), cutting media placeholders: "
        f"{error.problem.removesuffix('; in')}; raise max_prompt_length or shorten the prompt; in",
    )


def check_index(index: int, length: int) -> int:
    """``index`` as a valid position in ``[0, length)``; negatives count from the end."""
    if isinstance(index, bool) or not isinstance(index, int):
        raise TypeError(f"prompt index must be an int, got {type(index).__name__}")
    if not -length <= index < length:
        raise IndexError(f"prompt index {index} out of range [0, {length})")
    return index % length
