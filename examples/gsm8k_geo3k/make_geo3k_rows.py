"""Geo3K-style rows: a drawn right triangle, its legs written on it, the question its area.

    python examples/gsm8k_geo3k/make_geo3k_rows.py OUT_DIR [N]

Writes OUT_DIR/train.jsonl ({"prompt", "images", "reference"}) and OUT_DIR/img_*.png, the
row format of docs/multimodal.md (Geo3K itself: columns problem / images / answer).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from PIL import Image, ImageDraw


def triangle(a: int, b: int) -> Image.Image:
    image = Image.new("RGB", (112, 112), "white")
    draw = ImageDraw.Draw(image)
    x0, y0 = 16, 96
    x1, y1 = x0 + 8 * a, y0 - 8 * b
    draw.polygon([(x0, y0), (x1, y0), (x0, y1)], outline="black", width=2)
    draw.text(((x0 + x1) // 2, y0 + 2), str(a), fill="blue")
    draw.text((x0 - 12, (y0 + y1) // 2), str(b), fill="blue")
    return image


def main(out: Path, count: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    with (out / "train.jsonl").open("w", encoding="utf-8") as rows:
        for i in range(count):
            a, b = rng.randint(2, 10), rng.randint(2, 10)
            name = f"img_{i:03d}.png"
            triangle(a, b).save(out / name)
            question = "<image>The right triangle has the legs written on it. What is its area?"
            rows.write(
                json.dumps({"prompt": question, "images": name, "reference": str(a * b / 2)}) + "\n"
            )


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 16)
