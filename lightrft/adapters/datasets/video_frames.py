"""Videos of prompt rows: decoding, frame sampling at ``fps`` within ``max_frames``.

Accepted video values (one, or a list for several videos per prompt):

- a list of frames, each any image value of
  :mod:`~lightrft.adapters.datasets.multimodal_rows` (a PIL image, a path, bytes, base64);
  the frames are taken to be ``fps`` frames a second (the sampling rate asked for), so all
  are kept up to ``max_frames``;
- ``{"frames": [...], "fps": F}``: frames recorded at ``F`` frames a second;
- a path to a folder of image files (read in name order; ``fps`` as for a list) or
  ``{"path": folder, "fps": F}``;
- a path to a video file (``.mp4``, ``.webm``, ``.mkv``, ``.avi``, ``.mov``), decoded on CPU
  by PyAV (the optional ``video`` extra: ``pip install lightrft[video]``), which also gives
  its frame rate.

Sampling (:func:`sample_indices`): a clip of ``n`` frames at ``F`` frames a second lasts
``n / F`` seconds; ``floor(n * fps / F)`` frames are taken (at least 1, at most ``n`` and
``max_frames``), frame ``i`` of ``k`` being source frame ``floor(i * n / k)``; the result's
rate is ``k * F / n`` frames a second (what M-RoPE's time axis is scaled by). An odd count
is not rounded here: the model's processor pairs frames (temporal patch 2) and repeats the
last one (:mod:`~lightrft.adapters.hf.video_language`).

Every problem is a :class:`~lightrft.adapters.datasets.bad_rows.BadRowError` naming the file,
the row and the key (a missing file or folder, a file PyAV cannot decode, an empty video,
frames of different sizes).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from lightrft.adapters.datasets.bad_rows import BadRowError
from lightrft.adapters.datasets.multimodal_rows import load_image
from lightrft.domain.modality import VideoFrames

VIDEO_SUFFIXES = frozenset({".mp4", ".webm", ".mkv", ".avi", ".mov"})
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif"})


@dataclass(frozen=True)
class FrameSampling:
    """How frames are taken from every video: ``fps`` frames a second (None: every frame),
    at most ``max_frames`` (spread evenly over the clip)."""

    fps: float | None = 2.0
    max_frames: int = 16

    def __post_init__(self) -> None:
        if self.fps is not None and not self.fps > 0:
            raise ValueError(f"fps must be positive, got {self.fps}")
        if self.max_frames < 1:
            raise ValueError(f"max_frames must be at least 1, got {self.max_frames}")


def sample_indices(total: int, source_fps: float, sampling: FrameSampling) -> list[int]:
    """The source frames kept of ``total`` recorded at ``source_fps`` (see the module doc)."""
    if total < 1:
        raise ValueError("a video needs at least one frame")
    if sampling.fps is None:
        count = total
    else:
        count = math.floor(total * sampling.fps / source_fps + 1e-9)
    count = max(1, min(count, total, sampling.max_frames))
    return [i * total // count for i in range(count)]


def load_video(
    value: Any,
    *,
    where: str,
    key: str,
    sampling: FrameSampling,
    base_dir: Path | None = None,
) -> VideoFrames:
    """One video from any accepted value, sampled; raises :class:`BadRowError`."""
    if isinstance(value, VideoFrames):
        return value
    source_fps: float | None = None
    if isinstance(value, Mapping):
        if value.get("fps") is not None:
            source_fps = float(value["fps"])
            if not source_fps > 0:
                raise BadRowError(
                    where, key, f"a video's fps must be positive, got {source_fps}; in"
                )
        if "frames" in value:
            value = list(value["frames"])
        elif value.get("path"):
            value = value["path"]
        else:
            raise BadRowError(where, key, "a video mapping needs 'frames' or 'path' in")
    if isinstance(value, (str, os.PathLike)):
        path = Path(value).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if path.is_dir():
            names = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
            if not names:
                raise BadRowError(where, key, f"video folder {path} holds no image files; in")
            return _sampled(names, source_fps, sampling, where, key, f"video folder {path}")
        if not path.is_file():
            raise BadRowError(where, key, f"video file {path} does not exist (from)")
        frames, rate = decode_video_file(path, where, key)
        return _sampled(frames, source_fps or rate, sampling, where, key, f"video file {path}")
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        if not value:
            raise BadRowError(where, key, "a video's frame list is empty; in")
        frames = list(value)
        return _sampled(frames, source_fps, sampling, where, key, "the video's frames", base_dir)
    raise BadRowError(
        where,
        key,
        f"expected a video file, a frame folder or a list of frames, got a {type(value)}",
    )


def _sampled(
    frames: list[Any],
    source_fps: float | None,
    sampling: FrameSampling,
    where: str,
    key: str,
    name: str,
    base_dir: Path | None = None,
) -> VideoFrames:
    """The kept frames of ``frames`` (image values or PIL images, paths from ``base_dir``),
    decoded and checked (``name`` says what they are in errors)."""
    rate = source_fps if source_fps is not None else (sampling.fps or 1.0)
    kept = sample_indices(len(frames), rate, sampling)
    images = [
        load_image(frames[i], where=where, key=f"{key} frame {i}", base_dir=base_dir) for i in kept
    ]
    sizes = {image.size for image in images}
    if len(sizes) > 1:
        problem = f"{name} has frames of different sizes {sorted(sizes)}; expected one size"
        raise BadRowError(where, key, f"{problem}; in")
    return VideoFrames(tuple(images), len(kept) * rate / len(frames))


def decode_video_file(path: Path, where: str, key: str) -> tuple[list[Image.Image], float]:
    """Every frame of a video file (RGB) and its frame rate, decoded by PyAV."""
    try:
        import av  # the optional "video" extra
    except ImportError:
        problem = f"video file {path} needs PyAV to be decoded (pip install 'lightrft[video]'); in"
        raise BadRowError(where, key, problem) from None
    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise BadRowError(where, key, f"video file {path} has no video stream; in")
            stream = container.streams.video[0]
            frames = [frame.to_image().convert("RGB") for frame in container.decode(stream)]
            rate = stream.average_rate or stream.guessed_rate
    except BadRowError:
        raise
    except (av.error.FFmpegError, ValueError, OSError) as error:  # not a video, damaged
        raise BadRowError(
            where, key, f"video file {path} cannot be decoded ({error}); in"
        ) from None
    if not frames:
        raise BadRowError(where, key, f"video file {path} holds no frames; in")
    if not rate or float(rate) <= 0:
        raise BadRowError(where, key, f"video file {path} has no frame rate; in")
    return frames, float(rate)
