"""Rejection sampling of judge data, end to end: judgements of preference pairs sampled by a
scripted judge (it prefers the response starting with "Good", so which verdicts reach their
label is known by hand) are kept exactly when they agree, written as SFT rows that
``lightrft sft`` reads, and fine-tuned on for a step; and the CLI verb on the tiny model's
own HF engine."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from lightrft.adapters.datasets.sft_rows import load_sft_dataset
from lightrft.adapters.hf import load_tokenizer
from lightrft.entrypoints.jobs.judge_rejection import (
    RejectionSampleOptions,
    rejection_sample_judgements,
)
from lightrft.entrypoints.roots.judge_sampling import JudgeSampler
from tests.helpers.cli_runs import run_command
from tests.helpers.judge_scripts import PreferringJudge, write_judge_pairs


def test_keeps_the_agreeing_judgements_writes_sft_rows_and_fine_tunes(
    tiny_dir: Path, tmp_path: Path
) -> None:
    tokenizer = load_tokenizer(tiny_dir)
    out = tmp_path / "rs" / "rows.jsonl"
    options = RejectionSampleOptions(
        model=str(tiny_dir),
        data=str(write_judge_pairs(tmp_path / "pairs.jsonl")),
        out=out,
        n=3,
        batch_size=3,
        sft_run_dir=tmp_path / "sft",
        sft_overrides=("sft.total_steps=1", "sft.batch_size=2", "sft.micro_batch_size=2"),
    )
    summary = rejection_sample_judgements(
        options, JudgeSampler(tokenizer, PreferringJudge(tokenizer))
    )
    # Pairs 0-2: the label prefers "Good", as the judge does: all 3 samples kept each.
    # Pair 3: the label prefers "Bad": none kept.
    assert summary["pairs"] == 4 and summary["samples"] == 12
    assert summary["kept"] == 9 and summary["pairs_with_a_kept_judgement"] == 3
    assert math.isclose(summary["acceptance_rate"], 9 / 12)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 9
    for row in rows:
        assert "Say something about 3." not in row["prompt"]
        good_first = "Response 1: Good" in row["prompt"]
        assert row["completion"].endswith("[[A]]" if good_first else "[[B]]")
    dataset = load_sft_dataset(out, tokenizer)  # the project's SFT row layout
    assert dataset.stats.kept == 9 and dataset.stats.skipped_bad_rows == 0
    assert summary["sft"]["steps"] == 1 and summary["sft"]["train_rows"] == 9
    assert math.isfinite(summary["sft"]["train_loss_first"])
    assert json.loads(out.with_name("rows.jsonl.summary.json").read_text())["kept"] == 9


def test_the_cli_verb_samples_from_the_model(tiny_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    command = [sys.executable, "-m", "lightrft.entrypoints.cli", "rm", "rejection-sample"]
    flags = ["--model", str(tiny_dir), "--data", str(write_judge_pairs(tmp_path / "pairs.jsonl"))]
    flags += ["--n", "2", "--max-new-tokens", "4", "--out", str(out)]
    run_command([*command, *flags])
    summary = json.loads(out.with_name("rows.jsonl.summary.json").read_text())
    assert summary["pairs"] == 4 and summary["samples"] == 8
    kept = out.read_text().splitlines()
    assert len(kept) == summary["kept"]  # a random model: whatever reached its label
