"""Omni rows that mix media kinds in one message, for the tiny Qwen2.5-Omni thinker.

:func:`write_mixed_rows` writes a jsonl whose first row's user message holds, in order, a
clip, an image, text, a video (a list of frame files with its rate), a second clip, a second
image and text; then an image-only row and a text row. Files are PNG and 16-bit wav, written
here (no download).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from tests.helpers.tiny_multimodal import noise_image, write_wav
from tests.helpers.tiny_video import colour_frames

RATE = 16_000
MIXED_PARTS = ("audio", "image", "text", "video", "audio", "image", "text")
"""The content parts of the mixed row, in order."""


def _wav(path: Path, freq: float, seconds: float) -> str:
    t = np.arange(int(RATE * seconds)) / RATE
    return write_wav(path, 0.5 * np.sin(2 * np.pi * freq * t), RATE)


def _png(path: Path, width: int, height: int, seed: int) -> str:
    noise_image(width, height, seed).save(path)
    return path.name


def mixed_chat(folder: Path) -> list[dict[str, Any]]:
    """The mixed row's chat (files written into ``folder``): a 0.5 s clip, a 60x90 image,
    3 frames of 56x84 at 2 fps, a 0.25 s clip, a 40x40 image (see the module docstring)."""
    frames = []
    for i, frame in enumerate(colour_frames(3, 56, 84, seed=4)):
        frame.save(folder / f"frame{i}.png")
        frames.append(f"frame{i}.png")
    content = [
        {"type": "audio", "audio": _wav(folder / "a.wav", 440, 0.5)},
        {"type": "image", "image": _png(folder / "b.png", 60, 90, 1)},
        {"type": "text", "text": "then"},
        {"type": "video", "video": {"frames": frames, "fps": 2}},
        {"type": "audio", "audio": _wav(folder / "c.wav", 880, 0.25)},
        {"type": "image", "image": _png(folder / "d.png", 40, 40, 2)},
        {"type": "text", "text": "what now?"},
    ]
    return [{"role": "user", "content": content}]


def write_mixed_rows(folder: Path) -> Path:
    """``folder/omni.jsonl``: the mixed row, an image row, a text row (module docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    image = [{"type": "image", "image": _png(folder / "e.png", 56, 56, 3)}]
    rows = [
        {"prompt": mixed_chat(folder), "reference": "x"},
        {
            "prompt": [{"role": "user", "content": [*image, {"type": "text", "text": "red?"}]}],
            "reference": "x",
        },
        {"prompt": "plain words", "reference": "x"},
    ]
    path = folder / "omni.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path
