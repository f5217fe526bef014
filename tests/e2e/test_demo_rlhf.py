"""`lightrft demo rlhf` end to end on the tiny model: reward model, then GRPO against it
alone and with the math rule, in-process and served over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightrft.entrypoints.cli import main
from tests.helpers.demo_runs import TINY_DEMO

TINY = TINY_DEMO


@pytest.mark.parametrize("served", [False, True])
def test_demo_rlhf_runs_every_stage(tiny_dir: Path, tmp_path: Path, served: bool) -> None:
    argv = ["demo", "--run-dir", str(tmp_path), "--rm-pairs", "32", "--rm-epochs", "1"]
    argv += ["--serve-rm"] if served else []
    assert main([*argv, "rlhf", f"model.path={tiny_dir}", *TINY]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    rm = summary["reward_model"]
    assert rm["train_pairs"] == 24 and rm["held_out_pairs"] == 8
    assert 0.0 <= rm["held_out_accuracy"] <= 1.0
    assert (Path(rm["path"]) / "lightrft_reward.json").is_file()
    for stage in ("grpo_rm", "grpo_rm_rule"):
        assert summary[stage]["steps"] == 2
        for metric in ("rm", "answer_format", "math"):
            before, after = (
                summary[stage]["eval"][metric]["before"],
                summary[stage]["eval"][metric]["after"],
            )
            assert before is not None and after is not None, (stage, metric)
    rows = [
        json.loads(line)
        for line in (tmp_path / "grpo_rm_rule" / "metrics.jsonl").read_text().splitlines()
    ]
    train_rows = [r for r in rows if "reward/rm/mean" in r]
    assert train_rows and all("reward/math/mean" in r for r in train_rows)
    assert summary["served"] is served


def test_demo_rlhf_reuses_a_trained_reward_model(tiny_dir: Path, tmp_path: Path) -> None:
    first = tmp_path / "first"
    argv = ["demo", "--run-dir", str(first), "--rm-pairs", "32", "--rm-epochs", "1", "rlhf"]
    assert main([*argv, f"model.path={tiny_dir}", *TINY]) == 0
    rm_dir = json.loads((first / "summary.json").read_text())["reward_model"]["path"]
    again = tmp_path / "again"
    argv = ["demo", "--run-dir", str(again), "--rm-model", rm_dir, "rlhf"]
    assert (
        main([*argv, f"model.path={tiny_dir}", *TINY, "train.total_steps=1", "eval.every=1"]) == 0
    )
    summary = json.loads((again / "summary.json").read_text())
    assert summary["reward_model"] == {"path": rm_dir, "trained_here": False}
    assert not (again / "rm").exists() and summary["grpo_rm"]["steps"] == 1
