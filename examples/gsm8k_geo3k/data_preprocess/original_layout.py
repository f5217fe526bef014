"""The original LightRFT's row layout, and reading a downloaded dataset's split files: the
shared part of ``gsm8k.py`` and ``geo3k.py`` (imported from their folder).

A split's files are those under the input directory whose name starts with the split's name
followed by ``.``, ``-`` or ``_`` (``train.jsonl``, ``data/train-00000-of-00001.parquet``),
as JSON lines or parquet. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import datasets
import pyarrow.parquet as pq

SUFFIXES = (".jsonl", ".json", ".parquet")


def arguments(doc: str, dataset: str) -> argparse.Namespace:
    """The preprocessors' command line: --input_dir, --local_save_dir, --format, --splits."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--input_dir", type=Path, required=True, help=f"the downloaded {dataset}")
    parser.add_argument("--local_save_dir", type=Path, required=True, help="output directory")
    parser.add_argument("--format", choices=("parquet", "jsonl"), default="parquet")
    parser.add_argument("--splits", default="train,test", help="comma-separated")
    return parser.parse_args()


def split_files(input_dir: Path, split: str) -> list[Path]:
    """The files of ``split`` under ``input_dir``, sorted; an error when there is none."""
    found = sorted(
        path
        for path in input_dir.rglob(f"{split}*")
        if path.is_file()
        and path.suffix in SUFFIXES
        and path.name[len(split) : len(split) + 1] in (".", "-", "_")
    )
    if not found:
        sys.exit(
            f"{input_dir}: no {split} file (expected {split}.jsonl, {split}.parquet or "
            f"{split}-*.parquet under it)"
        )
    return found


def read_split(input_dir: Path, split: str) -> Iterator[tuple[Path, int, dict[str, Any]]]:
    """Every row of ``split`` as (file, row number in it, row); a parquet file's images stay
    as stored (``{"bytes", "path"}`` values)."""
    for path in split_files(input_dir, split):
        if path.suffix == ".parquet":
            rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
        else:
            with path.open(encoding="utf-8") as lines:
                rows = [json.loads(line) for line in lines if line.strip()]
        for number, row in enumerate(rows):
            yield path, number, row


def require(row: dict[str, Any], key: str, path: Path, number: int) -> Any:
    """``row[key]``, or exit naming the file, row and key."""
    if key not in row or row[key] is None:
        sys.exit(f"{path} row {number}: missing key {key!r} (found {sorted(row)})")
    return row[key]


def original_row(
    source: str, instruction: str, question: str, answer: str, label: str, split: str, index: int
) -> dict[str, Any]:
    """A row of the original's layout (verl's columns, the recipe label in ``extra_info``)."""
    return {
        "data_source": source,
        "prompt": [
            {"role": "system", "content": instruction},
            {"role": "user", "content": question},
        ],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": answer},
        "extra_info": {
            "label": label,
            "reference": answer,
            "split": split,
            "index": index,
            "answer": answer,
            "question": question,
        },
    }


def write_rows(
    rows: Sequence[dict[str, Any]],
    out: Path,
    features: datasets.Features | None = None,
    fmt: str = "parquet",
) -> Path:
    """``rows`` as ``out.parquet`` (with ``features``, in their order, when given) or
    ``out.jsonl``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        target = out.with_suffix(".jsonl")
        with target.open("w", encoding="utf-8") as lines:
            for row in rows:
                lines.write(json.dumps(row, ensure_ascii=False) + "\n")
        return target
    target = out.with_suffix(".parquet")
    if features is not None:  # the columns in the features' order
        rows = [{column: row[column] for column in features} for row in rows]
    datasets.Dataset.from_list(list(rows), features=features).to_parquet(str(target))
    return target
