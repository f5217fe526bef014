"""Prompt records with media as vLLM requests (plain data; no vLLM import here).

An encoded record's ids hold each media placeholder expanded to the positions its item
occupies (``<|AUDIO|>`` x 12 for a 0.5 s clip), and its payload keeps the raw items
(:mod:`~lightrft.adapters.engine_parts.source_media`). vLLM 0.32 expands placeholders itself from
the items it is given, so a request takes the ids with each run collapsed back to one
placeholder per item (checked against the counts the prompt encoder recorded), and
``multi_modal_data`` with the items under vLLM's modality names: PIL images for
``"image"``, ``(float32 waveform, sampling rate)`` pairs for ``"audio"``.

Media kinds are a registry (:data:`MEDIA_KINDS`): a kind maps the prompt encoder's noun to
vLLM's modality name and converts one item.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lightrft.adapters.engine_parts.source_media import SourceMedia, source_media
from lightrft.domain.types import PromptRecord


class MediaPromptError(ValueError):
    """A record whose media cannot become a vLLM request (named by row)."""


@dataclass(frozen=True)
class MediaKind:
    """How one kind of media reaches vLLM: its modality name and one item's conversion."""

    modality: str
    convert: Callable[[Any], Any]


def _image_item(image: Any) -> Any:
    return image.convert("RGB") if getattr(image, "mode", "RGB") != "RGB" else image


def _audio_item(clip: Any) -> tuple[np.ndarray, int]:
    wave, rate = clip
    return np.asarray(wave, dtype=np.float32), int(rate)


MEDIA_KINDS: dict[str, MediaKind] = {
    "image": MediaKind("image", _image_item),
    "audio": MediaKind("audio", _audio_item),
}


@dataclass(frozen=True)
class MediaRequest:
    """One prompt as vLLM takes it: ids with one placeholder per item, and the items."""

    prompt_token_ids: list[int]
    multi_modal_data: dict[str, list[Any]]

    @property
    def counts(self) -> dict[str, int]:
        """Items per vLLM modality."""
        return {modality: len(items) for modality, items in self.multi_modal_data.items()}


def row_name(record: PromptRecord) -> str:
    """The record's row as errors name it (the data layer's ``where``, else its uid)."""
    return str(record.metadata.get("where", record.uid))


def collapse_placeholders(ids: Sequence[int], entry: SourceMedia, where: str) -> list[int]:
    """``ids`` with item i's ``entry.counts[i]`` consecutive placeholders replaced by one;
    :class:`MediaPromptError` when the ids do not hold exactly those runs."""
    tokens = [int(t) for t in ids]
    out: list[int] = []
    item, i = 0, 0
    pad = entry.placeholder_id
    while i < len(tokens):
        if tokens[i] != pad:
            out.append(tokens[i])
            i += 1
            continue
        if item == len(entry.counts):
            raise MediaPromptError(
                f"{where}: more {entry.kind} placeholder tokens (id {pad}) than its "
                f"{len(entry.counts)} item(s) occupy"
            )
        want = entry.counts[item]
        run = tokens[i : i + want]
        if len(run) != want or any(t != pad for t in run):
            raise MediaPromptError(
                f"{where}: {entry.kind} item {item} should occupy {want} consecutive placeholder "
                f"tokens (id {pad}); the prompt's ids do not match its media"
            )
        out.append(pad)
        item += 1
        i += want
    if item != len(entry.counts):
        raise MediaPromptError(
            f"{where}: the prompt holds {item} {entry.kind} placeholder run(s) but its media "
            f"have {len(entry.counts)} item(s)"
        )
    return out


def media_request(record: PromptRecord) -> MediaRequest:
    """The vLLM request of an encoded record (module docstring); a text record gives its ids
    and no media. :class:`MediaPromptError` names the row when its media were not encoded,
    are of a kind vLLM is not given here, or do not match its ids."""
    entries = source_media(record.multimodal)
    where = row_name(record)
    if record.multimodal and not entries:
        raise MediaPromptError(
            f"{where}: the record carries media (payload keys {sorted(record.multimodal)}) but "
            "not the raw items vLLM needs; records must go through the model's prompt encoder "
            "(EncodedPromptSource), which keeps them"
        )
    ids = list(record.prompt_token_ids)
    data: dict[str, list[Any]] = {}
    for entry in entries:
        kind = MEDIA_KINDS.get(entry.kind)
        if kind is None:
            raise MediaPromptError(
                f"{where}: media of kind {entry.kind!r}; the vLLM engine takes "
                f"{sorted(MEDIA_KINDS)}"
            )
        ids = collapse_placeholders(ids, entry, where)
        data.setdefault(kind.modality, []).extend(kind.convert(item) for item in entry.items)
    return MediaRequest(ids, data)


def media_limits(records: Sequence[PromptRecord]) -> dict[str, int]:
    """The most items of each vLLM modality one record holds (``limit_mm_per_prompt`` for
    these rows); ``{}`` when none has media."""
    limits: dict[str, int] = {}
    for record in records:
        for modality, count in media_request(record).counts.items():
            limits[modality] = max(limits.get(modality, 0), count)
    return limits


def check_limits(
    requests: Sequence[MediaRequest], records: Sequence[PromptRecord], limits: Mapping[str, int]
) -> None:
    """:class:`MediaPromptError` naming the first row with more items of a modality than the
    engine was started for (``rollout.engine.media_per_prompt``)."""
    for request, record in zip(requests, records, strict=True):
        for modality, count in request.counts.items():
            if count > limits.get(modality, 0):
                raise MediaPromptError(
                    f"{row_name(record)}: {count} {modality} item(s), more than the vLLM engine was "
                    f"started for ({modality}: {limits.get(modality, 0)}); raise "
                    "rollout.engine.media_per_prompt"
                )


def refuse_media(
    requests: Sequence[MediaRequest], records: Sequence[PromptRecord], model_type: str
) -> None:
    """:class:`MediaPromptError` naming the first row with media, for an engine serving a
    model of no media family (``model_type``)."""
    for request, record in zip(requests, records, strict=True):
        if request.multi_modal_data:
            raise MediaPromptError(
                f"{row_name(record)}: {request.counts} media item(s), but the vLLM engine serves "
                f"a {model_type or 'text'} model; media rollouts on vLLM take the families of "
                "lightrft.adapters.vllm.families (or use rollout.engine=hf)"
            )
