"""Tiny reward data sets written in their published layouts (no download).

Images are 2x2 PNGs of one colour (so a test tells which one a pair chose), audio clips
are short 16-bit PCM ``.wav`` clips of one constant level, videos are placeholder files
(only their paths are read). Each writer returns the path a loader is given.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets
import numpy as np
from PIL import Image

from lightrft.adapters.datasets.rendering import PromptFormat, PromptRenderer
from tests.helpers.hf_media_files import png_bytes, wav_bytes, write_hf_parquet
from tests.unit.adapters.datasets.tiny_tokenizers import byte_tokenizer

PARTS_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: "
    "{% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for p in m['content'] %}"
    "{% if p['type'] == 'image' %}<IMG>{% else %}{{ p['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)
RATE = 8000


def renderer() -> PromptRenderer:
    """Renders ``"user: <prompt>\\nassistant: "`` (images as ``<IMG>``)."""
    return PromptRenderer(byte_tokenizer(PARTS_TEMPLATE), PromptFormat(render="chat"))


def rendered(prompt: str) -> str:
    """What :func:`renderer` makes of a user message."""
    return f"user: {prompt}\nassistant: "


def colour_png(path: Path, rgb: tuple[int, int, int]) -> Path:
    """A 2x2 PNG of one colour at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (2, 2), rgb).save(path)
    return path


def colour_of(image: Image.Image) -> tuple[int, int, int]:
    """The colour of a one-colour image."""
    return tuple(image.getpixel((0, 0)))  # type: ignore[return-value]


def level_wav(level: float) -> bytes:
    """A 16-sample clip at one constant ``level`` as ``.wav`` bytes."""
    return wav_bytes(np.full(16, level, dtype=np.float32), RATE)


def write_json(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """``rows`` as one JSON array."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(list(rows)))
    return path


def write_parquet(path: Path, rows: Sequence[Mapping[str, Any]], features: dict[str, Any]) -> Path:
    """``rows`` as an HF-layout parquet with ``features`` (name -> datasets feature)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = {name: [row.get(name) for row in rows] for name in features}
    return write_hf_parquet(path, columns, datasets.Features(features))


def touch_video(path: Path) -> Path:
    """A placeholder video file (only its path is read)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x00\x00\x00\x18ftypmp42")
    return path


def image_value(rgb: tuple[int, int, int]) -> dict[str, Any]:
    """An HF ``Image`` value as stored, of a one-colour PNG."""
    return {"bytes": png_bytes(Image.new("RGB", (2, 2), rgb)), "path": None}


STRING = datasets.Value("string")
FLOAT = datasets.Value("float64")
