"""`lightrft train grpo` on a directory in the original LightRFT's layout: the train split
trains, the test split evaluates, and each row is scored by its label's recipe (the built-in
gsm8k_rule, and a configured one), with metrics per recipe."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli_runs import TINY, run_train
from tests.helpers.original_layout import gsm8k_row, write_rows


def test_a_grpo_run_reads_the_original_layout_and_its_labels(
    tiny_dir: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    # a null top-level label falls back to extra_info's (gsm8k_rule); "short" overrides it
    rows = [{**gsm8k_row(f"{i} + {i}?", str(2 * i), "train", i), "label": None} for i in range(4)]
    rows += [{**gsm8k_row("Say yes.", "yes", "train", 9), "label": "short"}] * 2
    write_rows(data / "train.parquet", rows)
    write_rows(data / "test.parquet", rows[:2])
    run = tmp_path / "run"
    overrides = [o for o in TINY if not o.startswith(("data.train.num_builtin", "data.eval"))]
    run_train(
        tiny_dir,
        run,
        *overrides,
        f"data.train.path={data}",
        "data.train.label_key=label",
        "data.train.shuffle=false",
        "rollout.prompts_per_step=3",
        f"data.eval.path={data}",
        "data.eval.label_key=label",
        "eval.every=2",
        "reward.recipes={short: [{type: choice}]}",
    )
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    keys = set().union(*metrics)
    assert {"reward/recipe/gsm8k_rule/mean", "reward/recipe/short/mean"} <= keys
    assert {"reward/gsm8k_rule/accuracy", "reward/gsm8k_rule/format_rate"} <= keys
    assert "eval/reward/recipe/gsm8k_rule/mean" in keys  # the test split, by recipe too
    assert "reward/math/mean" not in keys  # every row is labelled: reward.sources unused
    assert json.loads((run / "summary.json").read_text())["steps"] == 2
