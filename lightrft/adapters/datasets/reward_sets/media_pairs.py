"""Preference pairs whose responses are media (generated images, videos, audio clips).

A text-to-image (video, audio) preference compares two generations of one prompt, so the
responses are media, not text. Such a :class:`~lightrft.domain.types.PreferencePair` holds:

- ``prompt``: the generation prompt, rendered like an RL prompt (its own media, e.g. the
  initial image of an image-to-video prompt, placed in it as for preference rows and
  decoded under ``multimodal["images"]``);
- ``chosen`` / ``rejected``: one marker per media item of the response (``<image>``,
  ``<video>``, ``<audio>``), where a reward model's template puts the media;
- ``multimodal["chosen"]`` / ``multimodal["rejected"]``: each response's media, in the
  payload format of prompt media: ``{"images": [PIL images]}``, ``{"audios": [(waveform,
  rate)]}``, and ``{"videos": [absolute path]}`` (videos are kept as paths, checked to
  exist; decoding them is the model's).

:func:`response_payload` gives the payload of one response (the prompt's media, then the
response's), the media a scalar reward model reads with that response.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from lightrft.adapters.datasets.bad_rows import BadRowError
from lightrft.adapters.datasets.multimodal_rows import load_audio, load_image, media_content
from lightrft.adapters.datasets.prompt_rows import RowRef
from lightrft.adapters.datasets.rendering import PromptRenderer
from lightrft.domain.types import RESPONSE_SIDES, PreferencePair

MediaKind = Literal["images", "videos", "audios"]
RESPONSE_MARKERS: dict[str, str] = {"images": "<image>", "videos": "<video>", "audios": "<audio>"}
"""The marker a media response's text holds per item, by media kind."""

SIDES = RESPONSE_SIDES


def media_item(
    kind: MediaKind,
    value: Any,
    ref: RowRef,
    key: str,
    *,
    base_dir: Path | None = None,
    rate: int | None = None,
) -> Any:
    """One decoded image / audio clip, or one video's absolute path (checked to exist);
    :class:`BadRowError` naming the row and ``key``. Relative paths start at ``base_dir``
    (default: the row's own folder)."""
    base = base_dir if base_dir is not None else ref.base_dir
    if value is None:
        raise BadRowError(ref.where, key, "missing key")
    if kind == "images":
        return load_image(value, where=ref.where, key=key, base_dir=base)
    if kind == "audios":
        return load_audio(value, where=ref.where, key=key, base_dir=base, rate=rate)
    if not isinstance(value, str) or not value.strip():
        raise BadRowError(ref.where, key, f"expected a video path, got {value!r} in")
    path = Path(value).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    if not path.is_file():
        raise BadRowError(ref.where, key, f"video file {path} does not exist (from)")
    return str(path.resolve())


def media_pair(
    uid: str,
    prompt: str,
    chosen: Mapping[str, Sequence[Any]],
    rejected: Mapping[str, Sequence[Any]],
    renderer: PromptRenderer,
    *,
    prompt_images: Sequence[Any] = (),
    where: str = "",
    prompt_key: str = "prompt",
) -> PreferencePair:
    """The pair of a generation ``prompt`` (with its own ``prompt_images``, decoded) whose
    responses are the media ``chosen`` / ``rejected`` (kind -> items)."""
    content: Any = prompt
    multimodal: dict[str, Any] = {}
    if prompt_images:
        content = media_content(prompt, len(prompt_images), 0, where, prompt_key)
        multimodal["images"] = list(prompt_images)
    texts = []
    for side, media in zip(SIDES, (chosen, rejected), strict=True):
        multimodal[side] = {kind: list(items) for kind, items in media.items()}
        texts.append(
            " ".join(RESPONSE_MARKERS[kind] for kind, items in media.items() for _ in items)
        )
    return PreferencePair(uid, renderer.text(content), texts[0], texts[1], multimodal=multimodal)


def response_payload(pair: PreferencePair, side: str) -> dict[str, Any]:
    """The media a reward model reads with one response (``side``: chosen or rejected):
    the prompt's media, then the response's, by kind
    (:meth:`~lightrft.domain.types.PreferencePair.response_media`)."""
    return pair.response_media(side)


def winner(first: float | None, second: float | None) -> int | None:
    """0 when ``first`` scores higher, 1 when ``second`` does, None for a tie (scores equal
    up to float rounding: sums of fractions such as 0.3 + 0.3 + 0.3 and 0.2 + 0.4 + 0.3)."""
    if first is None or second is None or math.isclose(first, second, rel_tol=1e-9):
        return None
    return 0 if first > second else 1
