"""Geometry3K in the original LightRFT's layout, from local files (nothing is downloaded).

    python examples/gsm8k_geo3k/data_preprocess/geo3k.py --input_dir DIR --local_save_dir OUT [--format jsonl]

DIR holds the downloaded hiyouga/geometry3k parquet files (``data/train-*.parquet``,
``data/test-*.parquet``): rows ``{"problem", "answer", "images": [image, ...]}``.
OUT receives ``train.parquet`` and ``test.parquet``, one row per problem:

    data_source   "hiyouga/geometry3k"
    prompt        [{"role": "system", ...}, {"role": "user", "content": problem}]
    images        the problem's images (a list of ``datasets`` Image values)
    ability       "math"
    reward_model  {"style": "rule", "ground_truth": answer}
    extra_info    {"label": "geo3k_rule", "reference": answer, "split", "index", "answer",
                   "question"}

With ``--format jsonl`` the images are written as PNG files under ``OUT/images/`` and the rows
hold their paths, relative to OUT. ``label`` names the reward recipe (geo3k_rule).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import datasets
from original_layout import arguments, original_row, read_split, require, write_rows
from PIL import Image

DATA_SOURCE = "hiyouga/geometry3k"
LABEL = "geo3k_rule"
INSTRUCTION = (
    "Reason about the figure and the question before answering, between <think> and "
    "</think>; then give the final answer in \\boxed{}."
)
MESSAGES = datasets.List({"role": datasets.Value("string"), "content": datasets.Value("string")})
TEXT, INDEX = datasets.Value("string"), datasets.Value("int64")


def features(images: datasets.Features | datasets.List) -> datasets.Features:
    """The output's column types (images: Image values, or paths with --format jsonl)."""
    return datasets.Features(
        {
            "data_source": TEXT,
            "prompt": MESSAGES,
            "images": images,
            "ability": TEXT,
            "reward_model": {"style": TEXT, "ground_truth": TEXT},
            "extra_info": {
                "label": TEXT,
                "reference": TEXT,
                "split": TEXT,
                "index": INDEX,
                "answer": TEXT,
                "question": TEXT,
            },
        }
    )


def geo3k_row(
    problem: str, answer: str, images: list[Any], split: str, index: int
) -> dict[str, Any]:
    """One row of the original's layout (the columns' order is that of :func:`features`)."""
    row = original_row(DATA_SOURCE, INSTRUCTION, problem, str(answer), LABEL, split, index)
    return {**row, "images": images}


def saved(images: list[Any], out: Path, split: str, index: int) -> list[str]:
    """``images`` (stored ``{"bytes", "path"}`` values) written as
    ``out/images/<split>_<index>_<k>.png``; their paths from ``out``."""
    (out / "images").mkdir(parents=True, exist_ok=True)
    names = []
    for k, image in enumerate(images):
        name = f"images/{split}_{index}_{k}.png"
        Image.open(io.BytesIO(image["bytes"])).save(out / name)
        names.append(name)
    return names


def main() -> None:
    args = arguments(__doc__ or "", "Geo3K files")
    out: Path = args.local_save_dir
    as_paths = args.format == "jsonl"
    for split in args.splits.split(","):
        rows = []
        for index, (path, number, row) in enumerate(read_split(args.input_dir, split)):
            images = list(require(row, "images", path, number))
            rows.append(
                geo3k_row(
                    require(row, "problem", path, number),
                    require(row, "answer", path, number),
                    saved(images, out, split, index) if as_paths else images,
                    split,
                    index,
                )
            )
        columns = features(datasets.List(TEXT if as_paths else datasets.Image()))
        target = write_rows(rows, out / split, features=columns, fmt=args.format)
        print(f"{split}: {len(rows)} rows -> {target}")


if __name__ == "__main__":
    main()
