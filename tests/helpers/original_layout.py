"""Tiny files in the original LightRFT's data layout (its ``data_preprocess/gsm8k.py``,
``geo3k.py`` and ``r1_aqa/avqa.py`` write it; verl's preprocessors write the same columns),
built here from hand-made rows, never downloaded.

A row: ``prompt`` (chat messages, a system message first), ``reward_model.ground_truth``,
``extra_info`` (``label``: the reward recipe, ``reference``: the answer, ...); Geo3K rows add
``images`` (a list of ``datasets`` Image values); R1-AQA rows keep their clip in the prompt
as ``{"type": "audio", "audio_url": PATH}`` and their answer and label at the top level too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets
from PIL import Image

from tests.helpers.hf_media_files import png_bytes

GSM8K_SYSTEM = (
    "You FIRST think about the reasoning process step by step as an internal monologue and "
    "then provide the final answer. The reasoning process MUST BE enclosed within <think> "
    "</think> tags. The final answer MUST BE put in \\boxed{} after the reasoning."
)


def gsm8k_row(question: str, answer: str, split: str, index: int) -> dict[str, Any]:
    """One row as the original's gsm8k.py writes it (label gsm8k_rule)."""
    return {
        "data_source": "openai/gsm8k",
        "prompt": [
            {"role": "system", "content": GSM8K_SYSTEM},
            {"role": "user", "content": question},
        ],
        "ability": "math",
        "reward_model": {"ground_truth": answer},
        "extra_info": {
            "label": "gsm8k_rule",
            "reference": answer,
            "split": split,
            "index": index,
            "answer": answer,
            "question": question,
        },
    }


def verl_row(question: str, answer: str, split: str, index: int) -> dict[str, Any]:
    """One row as verl's gsm8k / math preprocessors write it: a user message, the answer in
    ``reward_model.ground_truth`` only, no label."""
    return {
        "data_source": "openai/gsm8k",
        "prompt": [{"role": "user", "content": question}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": answer},
        "extra_info": {"split": split, "index": index},
    }


def write_rows(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    """``rows`` as parquet (written by ``datasets``) or JSON lines, by the suffix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        datasets.Dataset.from_list(list(rows)).to_parquet(str(path))
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def write_gsm8k_dir(directory: Path, splits: dict[str, int], suffix: str = ".parquet") -> Path:
    """``directory`` with one file per split (``{"train": 3, "test": 2}``: row counts);
    question i of a split asks for ``i + 1`` plus ``i + 1``."""
    for split, count in splits.items():
        rows = [gsm8k_row(f"{split} {i}: {i + 1} + {i + 1}?", str(2 * (i + 1)), split, i)
                for i in range(count)]  # fmt: skip
        write_rows(directory / f"{split}{suffix}", rows)
    return directory


def write_geo3k_dir(directory: Path, images: Sequence[Image.Image]) -> Path:
    """``directory/train.parquet``: one Geo3K row per image, the images as a list of
    ``datasets`` Image values (label geo3k_rule)."""
    rows = [
        {
            "prompt": [
                {"role": "system", "content": "Think, then box."},
                {"role": "user", "content": f"<image>Find x in figure {i}."},
            ],
            "images": [{"bytes": png_bytes(image), "path": None}],
            "reward_model": {"ground_truth": str(i + 3)},
            "extra_info": {"label": "geo3k_rule", "reference": str(i + 3), "index": i},
        }
        for i, image in enumerate(images)
    ]
    features = datasets.Features(
        {
            "prompt": datasets.List(
                {"role": datasets.Value("string"), "content": datasets.Value("string")}
            ),
            "images": datasets.List(datasets.Image()),
            "reward_model": {"ground_truth": datasets.Value("string")},
            "extra_info": {
                "label": datasets.Value("string"),
                "reference": datasets.Value("string"),
                "index": datasets.Value("int64"),
            },
        }
    )
    directory.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(directory / "train.parquet"))
    return directory


def avqa_row(clip: str, question: str, answer: str) -> dict[str, Any]:
    """One row as the original's r1_aqa/avqa.py writes it (label avqa_rule)."""
    return {
        "data_source": "r1-aqa-avqa",
        "prompt": [
            {
                "role": "user",
                "content": [
                    {"type": "audio", "audio_url": clip},
                    {
                        "type": "text",
                        "text": f"{question} Output the final answer in <answer></answer>.",
                    },
                ],
            }
        ],
        "reference": answer,
        "label": "avqa_rule",
        "audio_path": clip,
        "reward_model": {"ground_truth": answer},
        "extra_info": {"label": "avqa_rule", "reference": answer, "audio_path": clip},
    }
