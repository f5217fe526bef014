"""A built-in visual task that needs no download: shapes drawn with PIL.

``task="colour"``: one shape (circle, square or triangle, at least half the image wide) of
one of ``colours``; the answer is the colour's name. ``task="count"``: 1 to ``max_count``
(at most 9) shapes of any colour, each in its own cell of a 3 x 3 grid (no overlaps); the
answer is their number. ``task="compare"``: two such grid images with different counts
(1 to ``max_count`` each); the answer is ``"first"`` or ``"second"``, the image with more
shapes (a relation between two counts, not a property of one image). Rows are
``{"prompt", "reference", "images": [PIL image, ...]}``, deterministic in ``seed``;
:func:`visual_prompts` renders them through the same path as file datasets (the chat
template puts the image placeholders before the question).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Literal

from PIL import Image, ImageDraw

from lightrft.adapters.datasets.in_memory import InMemoryPromptSource
from lightrft.adapters.datasets.prompt_rows import RowSpec
from lightrft.adapters.datasets.rendering import PromptFormat

VisualTask = Literal["colour", "count", "compare"]
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "blue": (40, 60, 220),
    "green": (40, 180, 60),
    "yellow": (230, 210, 40),
}
QUESTIONS = {
    "colour": "What colour is the shape?",
    "count": "How many shapes are there?",
    "compare": "Which image has more shapes, the first or the second?",
}
SIZES = {"colour": 56, "count": 56, "compare": 84}
"""Default image sides: ``compare`` draws 84 pixels, so that each 28-pixel grid cell is one
merged Qwen2-VL token (at 56 pixels, 4 tokens an image, the tiny random model of the tests
learned it on fewer seeds and less stably; docs/multimodal.md)."""
BACKGROUND = (250, 250, 250)
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
    size: int | None = None,
) -> list[dict[str, Any]]:
    """``n`` rows of the task (see the module docstring), fixed by ``seed``; images are
    ``size`` pixels square (None: :data:`SIZES` of the task)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if task not in QUESTIONS:
        raise ValueError(f"task must be one of {sorted(QUESTIONS)}, got {task!r}")
    lowest = 2 if task == "compare" else 1  # two different counts need two values
    if not lowest <= max_count <= 9:
        raise ValueError(f"max_count must be in [{lowest}, 9] for task {task!r}, got {max_count}")
    size = SIZES[task] if size is None else size
    if size < 9:
        raise ValueError(f"size must be >= 9 pixels, got {size}")
    unknown = [c for c in colours if c not in COLOURS]
    if unknown or not colours:
        raise ValueError(f"colours must be among {sorted(COLOURS)}, got {list(colours)}")
    rng = random.Random(f"visual-{task}-{seed}")
    rows = []
    for _ in range(n):
        if task == "colour":
            image = Image.new("RGB", (size, size), BACKGROUND)
            name = rng.choice(list(colours))
            draw_shape(ImageDraw.Draw(image), rng, (0, 0, size), COLOURS[name])
            images, answer = [image], name
        elif task == "count":
            count = rng.randint(1, max_count)
            images, answer = [grid_image(rng, count, colours, size)], str(count)
        else:
            first, second = rng.sample(range(1, max_count + 1), 2)
            images = [grid_image(rng, c, colours, size) for c in (first, second)]
            answer = "first" if first > second else "second"
        rows.append({"prompt": QUESTIONS[task], "reference": answer, "images": images})
    return rows


def grid_image(rng: random.Random, count: int, colours: Sequence[str], size: int) -> Image.Image:
    """``count`` shapes of random ``colours`` in distinct random cells of a 3 x 3 grid."""
    image = Image.new("RGB", (size, size), BACKGROUND)
    canvas = ImageDraw.Draw(image)
    third = size // 3
    cells = rng.sample([(third * (i % 3), third * (i // 3), third) for i in range(9)], count)
    for cell in cells:
        draw_shape(canvas, rng, cell, COLOURS[rng.choice(list(colours))])
    return image


def visual_prompts(
    n: int,
    seed: int = 0,
    task: VisualTask = "colour",
    *,
    tokenizer: Any,
    prompt_format: PromptFormat | None = None,
    colours: Sequence[str] = ("red", "blue"),
    max_count: int = 3,
    size: int | None = None,
) -> InMemoryPromptSource:
    """The rows of :func:`visual_problems` as a prompt source; uids ``"visual-<task>-<seed>:<i>"``."""
    return InMemoryPromptSource(
        visual_problems(n, seed, task, colours=colours, max_count=max_count, size=size),
        tokenizer,
        spec=RowSpec(images_key="images"),
        prompt_format=prompt_format,
        name=f"visual-{task}-{seed}",
    )
