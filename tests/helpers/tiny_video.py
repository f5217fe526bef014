"""Synthetic videos for tests: frames drawn with PIL, a tiny video file written with PyAV,
and prompt records with video parts for the tiny Qwen-VL models (no download)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from lightrft.domain.modality import VideoFrames
from lightrft.domain.types import PromptRecord


def colour_frames(
    count: int, width: int = 56, height: int = 56, seed: int = 0
) -> list[Image.Image]:
    """``count`` random RGB frames of one size."""
    rng = np.random.default_rng(seed)
    return [
        Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))
        for _ in range(count)
    ]


def plain_frames(colours: Sequence[tuple[int, int, int]], size: int = 56) -> list[Image.Image]:
    """One flat-coloured frame per colour (survives a lossy codec nearly unchanged)."""
    return [Image.new("RGB", (size, size), colour) for colour in colours]


def write_video(path: Path, frames: Sequence[Image.Image], fps: int) -> Path:
    """``frames`` as an MPEG-4 video file at ``fps`` frames a second (needs PyAV)."""
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=fps)
        stream.width, stream.height = frames[0].size
        stream.pix_fmt = "yuv420p"
        for frame in frames:
            for packet in stream.encode(av.VideoFrame.from_image(frame)):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def video_record(
    tokenizer: object,
    uid: str,
    text: str,
    *,
    videos: Sequence[VideoFrames] = (),
    images: Sequence[Image.Image] = (),
) -> PromptRecord:
    """A rendered prompt record: its images, then its videos, then ``text``."""
    parts = [{"type": "image"}] * len(images) + [{"type": "video"}] * len(videos)
    parts.append({"type": "text", "text": text})
    chat = [{"role": "user", "content": parts}]
    rendered = tokenizer.apply_chat_template(  # type: ignore[attr-defined]
        chat, tokenize=False, add_generation_prompt=True
    )
    ids = tuple(tokenizer(rendered, add_special_tokens=False).input_ids)  # type: ignore[operator]
    media: dict[str, list[object]] = {}
    if images:
        media["images"] = list(images)
    if videos:
        media["videos"] = list(videos)
    return PromptRecord(uid, rendered, ids, multimodal=media, metadata={"where": f"t row {uid}"})
