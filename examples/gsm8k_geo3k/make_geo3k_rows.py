"""Geo3K-like raw files for trying the Geo3K scripts without the download: drawn right
triangles, their legs written on them, the question their area.

    python examples/gsm8k_geo3k/make_geo3k_rows.py OUT_DIR [N_TRAIN [N_TEST]]

Writes OUT_DIR/data/train-00000-of-00001.parquet and test-00000-of-00001.parquet in the layout
of the downloaded hiyouga/geometry3k files (``problem``, ``answer``, ``images``: a list of
images), which ``data_preprocess/geo3k.py`` turns into the original LightRFT's layout.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import datasets
from PIL import Image, ImageDraw

RAW = datasets.Features(
    {
        "images": datasets.List(datasets.Image()),
        "problem": datasets.Value("string"),
        "answer": datasets.Value("string"),
    }
)


def triangle(a: int, b: int) -> Image.Image:
    image = Image.new("RGB", (112, 112), "white")
    draw = ImageDraw.Draw(image)
    x0, y0 = 16, 96
    x1, y1 = x0 + 8 * a, y0 - 8 * b
    draw.polygon([(x0, y0), (x1, y0), (x0, y1)], outline="black", width=2)
    draw.text(((x0 + x1) // 2, y0 + 2), str(a), fill="blue")
    draw.text((x0 - 12, (y0 + y1) // 2), str(b), fill="blue")
    return image


def rows(count: int, rng: random.Random) -> list[dict[str, object]]:
    drawn = []
    for _ in range(count):
        a, b = rng.randint(2, 10), rng.randint(2, 10)
        drawn.append(
            {
                "images": [triangle(a, b)],
                "problem": "<image>The right triangle has its legs written on it. Find its area.",
                "answer": f"{a * b / 2:g}",
            }
        )
    return drawn


def main(out: Path, n_train: int, n_test: int) -> None:
    (out / "data").mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    for split, count in (("train", n_train), ("test", n_test)):
        table = datasets.Dataset.from_list(rows(count, rng), features=RAW)
        table.to_parquet(str(out / "data" / f"{split}-00000-of-00001.parquet"))


if __name__ == "__main__":
    counts = [int(n) for n in sys.argv[2:4]]
    main(Path(sys.argv[1]), *(counts + [16, 4][len(counts) :]))
