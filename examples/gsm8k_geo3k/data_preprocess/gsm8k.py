"""GSM8K in the original LightRFT's layout, from local files (nothing is downloaded).

    python examples/gsm8k_geo3k/data_preprocess/gsm8k.py --input_dir DIR --local_save_dir OUT [--format jsonl]

DIR holds the downloaded openai/gsm8k files (``train.jsonl`` / ``test.jsonl``, or the
``main/train-*.parquet`` files of the Hub copy): rows ``{"question", "answer": "... #### 42"}``.
OUT receives ``train.parquet`` and ``test.parquet`` (or ``.jsonl``), one row per problem:

    data_source   "openai/gsm8k"
    prompt        [{"role": "system", ...}, {"role": "user", "content": question}]
    ability       "math"
    reward_model  {"style": "rule", "ground_truth": answer}
    extra_info    {"label": "gsm8k_rule", "reference": answer, "split", "index", "answer",
                   "question", "full_solution"}

``answer`` is the number after ``####`` without thousands separators; ``label`` names the reward
recipe (gsm8k_rule: answer accuracy and the <think>/\\boxed{} format).
"""

from __future__ import annotations

import re
import sys
from typing import Any

from original_layout import arguments, original_row, read_split, require, write_rows

DATA_SOURCE = "openai/gsm8k"
LABEL = "gsm8k_rule"
INSTRUCTION = (
    "Think the problem through step by step before answering. Put that reasoning between "
    "<think> and </think>, then write the final answer in \\boxed{} after it."
)
FINAL = re.compile(r"####\s*(-?[0-9][0-9.,]*)")


def final_answer(solution: str, where: str) -> str:
    """The number after ``####`` in a GSM8K solution, commas removed."""
    found = FINAL.search(solution)
    if found is None:
        sys.exit(f"{where}: the answer has no '#### <number>' line: {solution[-80:]!r}")
    return found.group(1).replace(",", "").rstrip(".")


def gsm8k_row(question: str, solution: str, split: str, index: int, where: str) -> dict[str, Any]:
    """One row of the original's layout."""
    answer = final_answer(solution, where)
    row = original_row(DATA_SOURCE, INSTRUCTION, question, answer, LABEL, split, index)
    row["extra_info"]["full_solution"] = solution
    return row


def main() -> None:
    args = arguments(__doc__ or "", "GSM8K files")
    for split in args.splits.split(","):
        rows = [
            gsm8k_row(
                require(row, "question", path, number),
                require(row, "answer", path, number),
                split,
                index,
                f"{path} row {number}",
            )
            for index, (path, number, row) in enumerate(read_split(args.input_dir, split))
        ]
        target = write_rows(rows, args.local_save_dir / split, fmt=args.format)
        print(f"{split}: {len(rows)} rows -> {target}")


if __name__ == "__main__":
    main()
