"""AVQA (R1-AQA's audio question answering) in the original LightRFT's layout, from a local
line-JSON file (nothing is downloaded).

    python examples/r1_aqa/data_preprocess/avqa.py --input_jsonl FILE [--audio_dir DIR] --local_save_dir OUT [--val_ratio 0.1] [--format jsonl]

FILE: one record a line, ``{"question_text", "multi_choice": [...], "answer": <index>,
"audio_path", "id"?, "dataset_name"?}`` (R1-AQA's AVQA file). ``--audio_dir`` replaces the
directory of each relative ``audio_path``. OUT receives ``train.parquet`` (and
``validation.parquet`` with ``--val_ratio``), one row per record:

    data_source   "r1-aqa-avqa"
    prompt        [{"role": "user", "content": [{"type": "audio", "audio_url": PATH},
                                                {"type": "text", "text": question + choices}]}]
    reference     the chosen option's text;  label  "avqa_rule" (the reward recipe)
    audio_path    PATH
    reward_model  {"style": "rule", "ground_truth": reference}
    extra_info    {"label", "reference", "solution", "index", "id", "question_text",
                   "multi_choice", "answer_idx", "dataset_name", "audio_path"}
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

import datasets

LABEL = "avqa_rule"


def question(record: dict[str, Any], think: bool) -> str:
    """The user's text: the question (about the audio), its options, the answer format."""
    asked = str(record["question_text"]).replace("video", "audio")
    options = f"Choose one of these options: {record['multi_choice']}."
    if think:
        return f"{asked} {options} Think inside <think> </think>, then answer inside <answer></answer>."
    return f"{asked} {options} Give the answer inside <answer></answer>."


def avqa_row(
    record: dict[str, Any], index: int, audio_dir: Path | None, think: bool
) -> dict[str, Any]:
    """One row of the original's layout."""
    clip = str(record["audio_path"])
    if audio_dir is not None and not Path(clip).is_absolute():
        clip = str(audio_dir / Path(clip).name)
    choice = int(record["answer"])
    answer = str(record["multi_choice"][choice])
    return {
        "data_source": "r1-aqa-avqa",
        "prompt": [
            {
                "role": "user",
                "content": [
                    {"type": "audio", "audio_url": clip},
                    {"type": "text", "text": question(record, think)},
                ],
            }
        ],
        "reference": answer,
        "label": LABEL,
        "audio_path": clip,
        "reward_model": {"style": "rule", "ground_truth": answer},
        "extra_info": {
            "label": LABEL,
            "reference": answer,
            "solution": f"<answer>{answer}</answer>",
            "index": index,
            "id": record.get("id", index),
            "question_text": record["question_text"],
            "multi_choice": [str(option) for option in record["multi_choice"]],
            "answer_idx": choice,
            "dataset_name": record.get("dataset_name", "AVQA"),
            "audio_path": clip,
        },
    }


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of ``path``; exit naming the line of a bad one."""
    records = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                sys.exit(f"{path} line {number}: not JSON ({error.msg})")
            missing = [
                k
                for k in ("question_text", "multi_choice", "answer", "audio_path")
                if k not in record
            ]
            if missing:
                sys.exit(f"{path} line {number}: missing key(s) {missing}")
            if not 0 <= int(record["answer"]) < len(record["multi_choice"]):
                sys.exit(
                    f"{path} line {number}: answer {record['answer']} is not an index of multi_choice"
                )
            records.append(record)
    return records


def write(rows: list[dict[str, Any]], target: Path, fmt: str) -> None:
    if fmt == "jsonl":
        target.with_suffix(".jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        datasets.Dataset.from_list(rows).to_parquet(str(target.with_suffix(".parquet")))
    print(f"{target.name}: {len(rows)} rows")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input_jsonl", type=Path, required=True)
    parser.add_argument("--audio_dir", type=Path, default=None)
    parser.add_argument("--local_save_dir", type=Path, required=True)
    parser.add_argument("--enable_think", action="store_true", help="ask for <think> reasoning too")
    parser.add_argument(
        "--val_ratio", type=float, default=0.0, help="held-out fraction (validation)"
    )
    parser.add_argument("--format", choices=("parquet", "jsonl"), default="parquet")
    args = parser.parse_args()
    records = read_records(args.input_jsonl)
    rows = [avqa_row(r, i, args.audio_dir, args.enable_think) for i, r in enumerate(records)]
    held = round(len(rows) * args.val_ratio)
    order = list(range(len(rows)))
    random.Random(42).shuffle(order)
    out: Path = args.local_save_dir
    out.mkdir(parents=True, exist_ok=True)
    write([rows[i] for i in sorted(order[held:])], out / "train", args.format)
    if held:
        write([rows[i] for i in sorted(order[:held])], out / "validation", args.format)


if __name__ == "__main__":
    main()
