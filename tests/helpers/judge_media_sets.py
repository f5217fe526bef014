"""Reward data sets in the original LightRFT's layouts for the grm_vl_rl tests: Rapidata
image-to-video pairs (a parquet under ``data/``, real mp4 videos under ``videos/``, the
initial image as an HF ``Image`` value) and HPDv3 image pairs (``train.json`` + PNGs)."""

from __future__ import annotations

from pathlib import Path

import datasets

from tests.helpers.reward_set_files import colour_png, image_value, write_json, write_parquet
from tests.helpers.tiny_video import plain_frames, write_video

SCORES = ("Preference", "Coherence", "Alignment")
RAPIDATA_I2V = {
    "prompt": datasets.Value("string"),
    "file_name1": datasets.Value("string"),
    "file_name2": datasets.Value("string"),
    "prompt_asset": datasets.Image(),
    **{f"weighted_results{i}_{m}": datasets.Value("float64") for i in (1, 2) for m in SCORES},
}


def rapidata_i2v(root: Path) -> Path:
    """Two image-to-video pairs (the first video better in row 0, the second in row 1)."""
    for name, colour in (("a.mp4", (200, 30, 30)), ("b.mp4", (30, 200, 30))):
        (root / "videos").mkdir(parents=True, exist_ok=True)
        write_video(root / "videos" / name, plain_frames([colour] * 4, size=56), fps=2)
    rows = []
    for i, (first, second) in enumerate(((0.9, 0.2), (0.1, 0.8))):
        rows.append(
            {
                "prompt": f"make scene {i} move",
                "file_name1": "a.mp4",
                "file_name2": "b.mp4",
                "prompt_asset": image_value((9, 8, 7 + i)),
                **{f"weighted_results1_{m}": first for m in SCORES},
                **{f"weighted_results2_{m}": second for m in SCORES},
            }
        )
    return write_parquet(root / "data" / "train.parquet", rows, RAPIDATA_I2V)


def hpdv3(root: Path) -> Path:
    """Two text-to-image pairs (``path1`` preferred)."""
    colour_png(root / "images" / "a.png", (220, 20, 20))
    colour_png(root / "images" / "b.png", (20, 220, 20))
    rows = [
        {"prompt": "a red cat", "path1": "images/a.png", "path2": "images/b.png"},
        {"prompt": "a green dog", "path1": "images/b.png", "path2": "images/a.png"},
    ]
    return write_json(root / "train.json", rows)


def judge_media_sets(root: Path) -> str:
    """The original's ``name:path,name:path`` list of both sets, written under ``root``."""
    return f"rapidata-i2v:{rapidata_i2v(root / 'rapidata')},hpdv3:{hpdv3(root / 'hpdv3')}"
