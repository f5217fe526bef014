"""A built-in video task that needs no download: which way a dot moves across frames.

Each row is one video of ``frames`` frames (``size`` pixels square, light background) in
which a dot of one random colour moves ``step`` pixels a frame to the left or to the right
along a random row; the answer is ``"left"`` or ``"right"``. The path's centre is drawn
uniformly over the positions that keep the whole path inside the frame, independently of the
direction, so one frame alone tells the direction only near the edges; the direction is in
the change between frames (Qwen2-VL pairs frames into one temporal patch, so the first pair
already holds it). Rows are ``{"prompt", "reference", "video": VideoFrames}``, deterministic
in ``seed``; :func:`motion_prompts` renders them through the same path as file datasets.
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


def dot_path(rng: random.Random, frames: int, size: int, step: int, radius: int) -> list[int]:
    """The dot's centre x in each frame, moving right: a centre drawn uniformly over the
    positions that keep every frame's dot inside ``size`` pixels."""
    half = (frames - 1) * step / 2
    low, high = radius + 1 + half, size - 2 - radius - half  # a background pixel each side
    if low > high:
        raise ValueError(
            f"a dot of radius {radius} moving {step} px over {frames} frames does not fit {size} px"
        )
    centre = rng.uniform(low, high)
    return [round(centre - half + i * step) for i in range(frames)]


def motion_problems(
    n: int, seed: int = 0, *, frames: int = 4, size: int = 56, step: int = 8, radius: int = 6
) -> list[dict[str, Any]]:
    """``n`` rows (see the module doc), half left and half right in random order."""
    if n < 1 or frames < 2:
        raise ValueError(f"need n >= 1 and frames >= 2, got n={n}, frames={frames}")
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        answer = rng.choice(sorted(DIRECTIONS))
        xs = dot_path(rng, frames, size, step, radius)
        if DIRECTIONS[answer] < 0:
            xs.reverse()
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
