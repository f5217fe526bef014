"""Time of a process reward model's training pass: the LM head at the step ends only
(``logits_at_columns``) against the head at every column (what the PRM did before).

Run: ``.venv/bin/python bench/bench_prm_step_logits.py`` (about a minute on 2 cores, on the
embedded SmolLM2-135M-Instruct; ``--model DIR`` another causal LM); prints a markdown table.

What is measured: one forward + backward of the step loss
(``domain/process_rewards.py:step_classification_loss``) over ``--rows`` built-in PRM rows of
``lightrft demo prm`` (``synthetic_steps``, answer lines and junk lines, both phrasings),
prompts in the model's chat template, in fp32; best of ``--repeats`` passes after a warm-up,
both ways alternating in one process. "logits MB" is the size of the logits tensor each way
builds (B x columns x V x 4 bytes), computed from the shapes. On a shared machine the times
are noisy: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from lightrft.adapters.datasets.synthetic_steps import synthetic_step_rows
from lightrft.adapters.hf.default_model import default_model_path
from lightrft.adapters.model_parts.column_logits import logits_at_columns
from lightrft.adapters.reward_models import process
from lightrft.adapters.reward_models.process import HfProcessRewardModel
from lightrft.domain.process_rewards import step_classification_loss

MB = 1024 * 1024


def _every_column(model: nn.Module, keep: Tensor, **inputs: Any) -> Tensor:
    """The earlier path: logits at every column, then the step-end columns picked."""
    logits: Tensor = model(**inputs, use_cache=False).logits
    return logits[:, keep]


def _pass(prm: HfProcessRewardModel, rows: list[Any], labels: Tensor) -> float:
    started = time.perf_counter()
    positive, negative = prm.step_logits(rows)
    loss = step_classification_loss(positive, negative, labels).mean()
    loss.backward()  # type: ignore[no-untyped-call]
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None, help="a causal LM directory")
    parser.add_argument("--rows", type=int, default=8, help="PRM rows in the batch")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    prm = HfProcessRewardModel.from_pretrained(
        args.model or default_model_path(), torch.device("cpu")
    )
    prm.lm.requires_grad_(True)
    prm.lm.train()
    data = synthetic_step_rows(
        args.rows, 0, length=1, error_rate=0.3, answer_step=True, junk_rate=0.15,
        phrasings=("symbol", "sentence"),
    )  # fmt: skip
    template = prm.tokenizer.apply_chat_template
    rows = [
        prm.encode(
            str(template([{"role": "user", "content": r["prompt"]}], tokenize=False,
                         add_generation_prompt=True)),
            r["steps"],
        )
        for r in data
    ]  # fmt: skip
    labels = torch.tensor([float(x == "+") for r in data for x in r["labels"]])
    columns = len({end for row in rows for end in row.ends})
    width = max(len(row.ids) for row in rows)
    vocab = prm.lm.get_output_embeddings().weight.shape[0]
    ways = {"every column (before)": _every_column, "step ends only": logits_at_columns}
    times: dict[str, list[float]] = {name: [] for name in ways}
    try:
        for repeat in range(args.repeats + 1):
            for name, way in ways.items():
                process.logits_at_columns = way  # type: ignore[attr-defined]  # what step_logits calls
                prm.lm.zero_grad(set_to_none=True)
                elapsed = _pass(prm, rows, labels)
                if repeat:  # the first round warms up
                    times[name].append(elapsed)
    finally:
        process.logits_at_columns = logits_at_columns  # type: ignore[attr-defined]
    load = os.getloadavg()[0]
    print(f"{args.rows} rows, {width} columns, {columns} of them step ends, vocabulary {vocab}; "
          f"threads {torch.get_num_threads()}, 1-minute load {load:.2f}\n")  # fmt: skip
    print("| LM head at | best fwd+bwd ms | logits MB |")
    print("|---|---|---|")
    for name, kept in zip(ways, (width, columns), strict=True):
        size = args.rows * kept * vocab * 4 / MB
        print(f"| {name} | {min(times[name]):.0f} | {size:.1f} |")


if __name__ == "__main__":
    main()
