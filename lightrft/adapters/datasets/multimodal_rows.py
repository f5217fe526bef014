"""Images and audio of prompt rows: decoding, validation, and chat content with media parts.

Accepted image values (one, or a list for several images per prompt):

- a ``PIL.Image.Image``;
- a path (``str`` / ``os.PathLike``), absolute or relative to the data file's directory;
- raw encoded bytes (PNG, JPEG ...);
- a base64 string, bare or as a ``data:image/...;base64,`` URI;
- an HF ``datasets`` ``Image`` feature value: ``{"bytes": ..., "path": ...}``.

Accepted audio values (one or a list): ``{"array": [...], "sampling_rate": int}`` (the HF
``Audio`` feature decoded), a ``(array, sampling_rate)`` pair, a path to a PCM ``.wav`` file,
the bytes of one, or the HF ``Audio`` feature as stored, ``{"bytes": ..., "path": ...}`` (the
bytes of a 16-bit PCM ``.wav``, or a path).

Every problem is a :class:`~lightrft.adapters.datasets.prompt_rows.BadRowError` naming the
file, the row and the key (a missing file, bytes that are not an image, a sampling rate
other than the expected one, placeholders that do not match the media).

Prompt content with media becomes a chat whose user message is a list of parts
(``{"type": "image"}``, ``{"type": "audio"}``, ``{"type": "text", "text": ...}``), which
the model's chat template renders as its placeholder tokens. ``<image>`` / ``<audio>``
markers in the prompt text place the media (there must be one per item); without markers
the media come first, then the text.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import re
import wave
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from lightrft.adapters.datasets.bad_rows import BadRowError

IMAGE_MARKER = "<image>"
AUDIO_MARKER = "<audio>"
VIDEO_MARKER = "<video>"
_PART_OF_MARKER = {IMAGE_MARKER: "image", VIDEO_MARKER: "video", AUDIO_MARKER: "audio"}
_MARKERS = re.compile("(" + "|".join(re.escape(m) for m in _PART_OF_MARKER) + ")")
_MEMORY_FILE = re.compile(r"<_io\.BytesIO object at 0x[0-9a-f]+>")  # in PIL's messages
Audio = tuple[np.ndarray, int]


def as_list(value: Any) -> list[Any]:
    """``value`` as a list of items (a single item, or a list / tuple of them)."""
    if isinstance(value, (list, tuple)) and not _is_audio_pair(value):
        return list(value)
    return [value]


def _is_audio_pair(value: Any) -> bool:
    return (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[1], int)
        and not isinstance(value[0], (str, bytes))
    )


def load_image(value: Any, *, where: str, key: str, base_dir: Path | None = None) -> Image.Image:
    """One RGB image from any accepted value; raises :class:`BadRowError`."""
    if isinstance(value, Image.Image):
        return value.convert("RGB")
    if isinstance(value, Mapping):
        if value.get("bytes"):
            return load_image(bytes(value["bytes"]), where=where, key=key)
        if value.get("path"):
            return load_image(value["path"], where=where, key=key, base_dir=base_dir)
        raise BadRowError(where, key, "an image mapping needs 'bytes' or 'path' in")
    if isinstance(value, (bytes, bytearray)):
        return _decode(bytes(value), where, key)
    if isinstance(value, (str, os.PathLike)):
        text = str(value)
        if text.startswith("data:"):
            return _decode(_base64(text.partition(",")[2], where, key), where, key)
        path = Path(text).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if path.is_file():
            return _decode(path.read_bytes(), where, key, name=f"image file {path}")
        if len(text) > 100 and "/" not in text[:8] and "." not in text[-5:]:
            return _decode(_base64(text, where, key), where, key)
        raise BadRowError(where, key, f"image file {path} does not exist (from)")
    raise BadRowError(where, key, f"expected an image path, bytes or base64, got a {type(value)}")


def _base64(text: str, where: str, key: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BadRowError(where, key, "invalid base64 image data in") from None


def _decode(data: bytes, where: str, key: str, name: str = "the image data") -> Image.Image:
    try:
        image = Image.open(io.BytesIO(data))
        image.load()
    except UnidentifiedImageError:
        problem = f"{name} holds no readable image (expected PNG, JPEG, WebP ... data); in"
        raise BadRowError(where, key, problem) from None
    except (OSError, ValueError) as error:  # truncated or damaged data of a known format
        reason = _MEMORY_FILE.sub("the data", str(error))
        raise BadRowError(where, key, f"{name}: damaged image ({reason}); in") from None
    return image.convert("RGB")


def load_audio(
    value: Any, *, where: str, key: str, base_dir: Path | None = None, rate: int | None = None
) -> Audio:
    """One mono clip ``(waveform float32 (S,), sampling rate)``; ``rate``: the required
    sampling rate (None: any; a clip at another rate is refused, never resampled). Raises
    :class:`BadRowError` naming the file (or "audio clip" for arrays)."""
    name = "audio clip"
    if isinstance(value, Mapping) and "array" in value:
        clip: Audio = (np.asarray(value["array"], dtype=np.float32), int(value["sampling_rate"]))
    elif isinstance(value, Mapping) and value.get("bytes"):  # HF Audio as stored
        name = f"audio data of {value.get('path') or 'the row'}"
        clip = _read_wav(io.BytesIO(bytes(value["bytes"])), name, where, key)
    elif isinstance(value, Mapping) and value.get("path"):
        return load_audio(value["path"], where=where, key=key, base_dir=base_dir, rate=rate)
    elif _is_audio_pair(value):
        clip = (np.asarray(value[0], dtype=np.float32), int(value[1]))
    elif isinstance(value, (str, os.PathLike)):
        path = Path(value).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.is_file():
            raise BadRowError(where, key, f"audio file {path} does not exist (from)")
        name = f"audio file {path}"
        clip = _read_wav(path, str(path), where, key)
    elif isinstance(value, (bytes, bytearray)):
        name = "the audio data"
        clip = _read_wav(io.BytesIO(bytes(value)), name, where, key)
    else:
        raise BadRowError(where, key, f"expected audio array + rate or a .wav path, got {value!r}")
    if clip[0].ndim != 1:
        raise BadRowError(where, key, f"{name} has shape {clip[0].shape}, expected mono (S,); in")
    if clip[0].size == 0:
        raise BadRowError(where, key, f"{name} holds no samples (expected a non-empty clip); in")
    if rate is not None and clip[1] != rate:
        raise BadRowError(
            where, key, f"{name} is sampled at {clip[1]} Hz, expected {rate} Hz (resample it); in"
        )
    return clip


def _read_wav(source: Path | io.BytesIO, name: str, where: str, key: str) -> Audio:
    """A mono clip from a 16-bit PCM ``.wav`` file or its bytes (``name`` in errors)."""
    try:
        with wave.open(str(source) if isinstance(source, Path) else source, "rb") as file:
            width, channels = file.getsampwidth(), file.getnchannels()
            frames = file.readframes(file.getnframes())
            rate = file.getframerate()
    except (wave.Error, EOFError) as error:
        problem = f"{name} is not a PCM .wav file ({error}; convert it to 16-bit .wav); in"
        raise BadRowError(where, key, problem) from None
    if width != 2:
        raise BadRowError(where, key, f"{name}: only 16-bit PCM .wav is read; in")
    samples = np.frombuffer(frames, dtype="<i2").astype(np.float32) / 32768.0
    return samples.reshape(-1, channels).mean(axis=1), rate


def media_content(
    content: str | Sequence[Mapping[str, Any]],
    images: int,
    audios: int,
    where: str,
    key: str,
    *,
    videos: int = 0,
) -> list[dict[str, Any]]:
    """The chat of ``content`` whose last user message carries ``images`` image parts,
    ``videos`` video parts and ``audios`` audio parts (at their ``<image>`` / ``<video>`` /
    ``<audio>`` markers, else first in that order); raises :class:`BadRowError` when the
    markers do not match the media."""
    chat: list[dict[str, Any]] = (
        [{"role": "user", "content": content}]
        if isinstance(content, str)
        else [dict(m) for m in content]
    )
    users = [i for i, m in enumerate(chat) if m.get("role") == "user"]
    if not users or not isinstance(chat[users[-1]]["content"], str):
        raise BadRowError(where, key, "media need a user message with text content in")
    text = chat[users[-1]]["content"]
    marked = {_PART_OF_MARKER[m]: text.count(m) for m in _PART_OF_MARKER}
    counts = {"image": images, "video": videos, "audio": audios}
    parts: list[dict[str, str]]
    if sum(marked.values()) == 0:
        parts = [{"type": kind} for kind, count in counts.items() for _ in range(count)]
        parts.append({"type": "text", "text": text})
    elif marked != counts:
        said = f"{marked['image']} images and {marked['audio']} audio clips"
        has = f"{images} images and {audios} clips"
        if videos or marked["video"]:
            said = f"{marked['image']} images, {marked['video']} videos and {marked['audio']} audio clips"
            has = f"{images} images, {videos} videos and {audios} clips"
        raise BadRowError(where, key, f"the prompt marks {said} but the row has {has}; see")
    else:
        parts = []
        for piece in _MARKERS.split(text):
            if piece in _PART_OF_MARKER:
                parts.append({"type": _PART_OF_MARKER[piece]})
            elif piece:
                parts.append({"type": "text", "text": piece})
    chat[users[-1]] = {**chat[users[-1]], "content": parts}
    return chat
