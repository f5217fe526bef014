"""A built-in visual task that needs no download: shapes drawn with PIL.

``task="colour"``: one shape (circle, square or triangle, at least half the image wide) of
one of ``colours``; the answer is the colour's name. ``task="count"``: 1 to ``max_count``
(at most 9) shapes of any colour, each in its own cell of a 3 x 3 grid (no overlaps); the
answer is their number. Rows are ``{"prompt", "reference", "images": [PIL image]}``,
deterministic in ``seed``; :func:`visual_prompts` renders them through the same path as
file datasets (the chat template puts the image placeholder before the question).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Literal

from PIL import Image, ImageDraw

from lightrft.adapters.datasets.in_memory import InMemoryPromptSource
from lightrft.adapters.datasets.prompt_rows import RowSpec
from lightrft.adapters.datasets.rendering import PromptFormat

VisualTask = Literal["colour", "count"]
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "blue": (40, 60, 220),
    "green": (40, 180, 60),
    "yellow": (230, 210, 40),
}
QUESTIONS = {"colour": "What colour is the shape?", "count": "How many shapes are there?"}
_SHAPES = ("circle", "square", "triangle")


def draw_shape(
    canvas: ImageDraw.ImageDraw, rng: random.Random, cell: tuple[int, int, int], fill: Any
) -> None:
    """One random shape of ``fill`` colour inside the square ``cell`` (x, y, side), at
    least half the cell wide (shapes in different cells never overlap)."""
    x0, y0, side = cell
    size = rng.randint(side // 2, side - 2)
    x, y = x0 + rng.randint(0, side - size - 1), y0 + rng.randint(0, side - size - 1)
    shape = rng.choice(_SHAPES)
    if shape == "circle":
        canvas.ellipse((x, y, x + size, y + size), fill=fill)
    elif shape == "square":
        canvas.rectangle((x, y, x + size, y + size), fill=fill)
    else:
        canvas.polygon([(x, y + size), (x + size, y + size), (x + size // 2, y)], fill=fill)


def visual_problems(
    n: int,
    seed: int = 0,
    task: VisualTask = "colour",
    *,
    colours: Sequence[str] = ("red", "blue"),
    max_count: int = 3,
    size: int = 56,
) -> list[dict[str, Any]]:
    """``n`` rows of the task (see the module docstring), fixed by ``seed``."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not 1 <= max_count <= 9:
        raise ValueError(f"max_count must be in [1, 9], got {max_count}")
    if task not in QUESTIONS:
        raise ValueError(f"task must be one of {sorted(QUESTIONS)}, got {task!r}")
    unknown = [c for c in colours if c not in COLOURS]
    if unknown or not colours:
        raise ValueError(f"colours must be among {sorted(COLOURS)}, got {list(colours)}")
    rng = random.Random(f"visual-{task}-{seed}")
    rows = []
    for _ in range(n):
        image = Image.new("RGB", (size, size), (250, 250, 250))
        canvas = ImageDraw.Draw(image)
        if task == "colour":
            name = rng.choice(list(colours))
            draw_shape(canvas, rng, (0, 0, size), COLOURS[name])
            answer = name
        else:
            count = rng.randint(1, max_count)
            third = size // 3
            cells = rng.sample(
                [(third * (i % 3), third * (i // 3), third) for i in range(9)], count
            )
            for cell in cells:
                draw_shape(canvas, rng, cell, COLOURS[rng.choice(list(colours))])
            answer = str(count)
        rows.append({"prompt": QUESTIONS[task], "reference": answer, "images": [image]})
    return rows


def visual_prompts(
    n: int,
    seed: int = 0,
    task: VisualTask = "colour",
    *,
    tokenizer: Any,
    prompt_format: PromptFormat | None = None,
    colours: Sequence[str] = ("red", "blue"),
) -> InMemoryPromptSource:
    """The rows of :func:`visual_problems` as a prompt source; uids ``"visual-<task>-<seed>:<i>"``."""
    return InMemoryPromptSource(
        visual_problems(n, seed, task, colours=colours),
        tokenizer,
        spec=RowSpec(images_key="images"),
        prompt_format=prompt_format,
        name=f"visual-{task}-{seed}",
    )
