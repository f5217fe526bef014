"""A built-in video task that needs no download: which way a dot moves across frames.

Each row is one video of ``frames`` frames (``size`` pixels square, light background) in
which a dot of one random colour starts at the centre column and moves ``step`` pixels a
frame to the left or to the right along a random row; the answer is ``"left"`` or
``"right"``. The first frame is the same for both answers (the dot at the centre; only its
row and colour vary), so it says nothing about the direction; each later frame tells it by
the side of the centre the dot is on. Qwen2-VL pairs frames into one temporal patch, so the
first patch (frames 0 and 1) already holds the motion.

Why the dot starts at the centre: an earlier layout drew the path's centre uniformly over the
frame, independently of the direction, meant to hide the direction from one frame; with a
24-pixel path in a 56-pixel frame the start positions of the two directions do not even
overlap, so the first frame alone told the direction, and a tiny random model did not learn
it (docs/multimodal.md). Rows are ``{"prompt", "reference", "video": VideoFrames}``,
deterministic in ``seed``; :func:`motion_prompts` renders them through the same path as file
datasets.
"""

from __future__ import annotations

import random
from typing import Any

from PIL import Image, ImageDraw

from lightrft.adapters.datasets.in_memory import InMemoryPromptSource
from lightrft.adapters.datasets.prompt_rows import RowSpec
from lightrft.adapters.datasets.rendering import PromptFormat
from lightrft.adapters.datasets.synthetic_visual import BACKGROUND, COLOURS
from lightrft.adapters.datasets.video_frames import FrameSampling
from lightrft.domain.modality import VideoFrames

QUESTION = "Which way does the dot move, left or right?"
DIRECTIONS = {"left": -1, "right": 1}


def dot_path(direction: int, frames: int, size: int, step: int, radius: int) -> list[int]:
    """The dot's centre x in each frame: from ``size // 2``, ``step`` pixels a frame in
    ``direction`` (-1 left, 1 right); the whole dot stays inside with a background pixel at
    each edge."""
    last = size // 2 + direction * (frames - 1) * step
    if not radius + 1 <= last <= size - 2 - radius:
        raise ValueError(
            f"a dot of radius {radius} moving {step} px a frame from the centre over {frames} "
            f"frames does not fit {size} px"
        )
    return [size // 2 + direction * i * step for i in range(frames)]


def motion_problems(
    n: int, seed: int = 0, *, frames: int = 4, size: int = 56, step: int = 6, radius: int = 8
) -> list[dict[str, Any]]:
    """``n`` rows (see the module doc), each direction drawn with probability one half."""
    if n < 1 or frames < 2:
        raise ValueError(f"need n >= 1 and frames >= 2, got n={n}, frames={frames}")
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        answer = rng.choice(sorted(DIRECTIONS))
        xs = dot_path(DIRECTIONS[answer], frames, size, step, radius)
        y = rng.randint(radius + 1, size - 2 - radius)
        colour = COLOURS[rng.choice(sorted(COLOURS))]
        video = [_frame(x, y, radius, size, colour) for x in xs]
        rows.append(
            {"prompt": QUESTION, "reference": answer, "video": VideoFrames(tuple(video), 2.0)}
        )
    return rows


def _frame(x: int, y: int, radius: int, size: int, colour: tuple[int, int, int]) -> Image.Image:
    image = Image.new("RGB", (size, size), BACKGROUND)
    ImageDraw.Draw(image).ellipse((x - radius, y - radius, x + radius, y + radius), fill=colour)
    return image


def motion_prompts(
    n: int,
    seed: int = 0,
    *,
    tokenizer: Any,
    prompt_format: PromptFormat | None = None,
    frames: int = 4,
) -> InMemoryPromptSource:
    """The rows of :func:`motion_problems` as a prompt source; uids ``"video-motion-<seed>:<i>"``."""
    return InMemoryPromptSource(
        motion_problems(n, seed, frames=frames),
        tokenizer,
        spec=RowSpec(videos_key="video", frame_sampling=FrameSampling(None, frames)),
        prompt_format=prompt_format,
        name=f"video-motion-{seed}",
    )
