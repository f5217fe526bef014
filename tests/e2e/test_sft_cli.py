"""`lightrft sft` on a tiny random HF model: trains, resumes, exports a directory that
`lightrft train grpo` loads directly."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lightrft.entrypoints.cli import main
from tests.helpers.cli_runs import train_grpo_command

ROWS = [{"prompt": f"{a}+{b}=", "completion": str(a + b)} for a in range(2, 6) for b in range(2, 4)]
SFT = [
    "sft.batch_size=4",
    "sft.micro_batch_size=2",
    "sft.epochs=3",
    "sft.eval_every=3",
    "sft.eval_data.num_builtin=4",
    "optim.lr=1e-2",
    "logging.progress=false",
]


def write_rows(path: Path) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    return path


def test_sft_trains_and_its_export_feeds_train(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_rows(tmp_path / "rows.jsonl")
    run_dir = tmp_path / "sft"
    argv = ["sft", "--model", str(tiny_dir), "--data", str(data), "--run-dir", str(run_dir)]
    assert main([*argv, *SFT]) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 6  # 8 rows // 4 per step = 2 steps per epoch, 3 epochs
    assert summary["train_loss_last"] < summary["train_loss_first"]
    assert "eval_loss_before" in summary and "eval_loss_after" in summary
    final = Path(summary["final_model"])
    assert (final / "config.json").is_file() and (final / "tokenizer.json").is_file()
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics if "train/loss" in m] == [1, 2, 3, 4, 5, 6]
    rl_dir = tmp_path / "rl"
    command = train_grpo_command(
        final,
        rl_dir,
        "train.total_steps=1",
        "rollout.max_new_tokens=4",
        "rollout.prompts_per_step=2",
        "rollout.n_samples_per_prompt=2",
        "data.train.num_builtin=4",
        "data.eval=null",
        "logging.progress=false",
        "checkpoint.export_final=false",
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((rl_dir / "summary.json").read_text())["steps"] == 1


def test_sft_resume_continues_to_the_same_loss(tiny_dir: Path, tmp_path: Path) -> None:
    data = write_rows(tmp_path / "rows.jsonl")
    common = ["sft", "--model", str(tiny_dir), "--data", str(data), *SFT, "sft.eval_data=null"]
    straight = tmp_path / "straight"
    assert main([*common, "--run-dir", str(straight), "checkpoint.export_final=false"]) == 0
    split = tmp_path / "split"
    first = [
        *common,
        "--run-dir",
        str(split),
        "checkpoint.every=2",
        "checkpoint.export_final=false",
    ]
    assert main([*first, "sft.total_steps=4"]) == 0
    # the schedule must not change between the two halves: total_steps is the full run's
    assert main([*first, "checkpoint.resume=true"]) == 0
    losses = {}
    for run in (straight, split):
        rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        losses[run.name] = {r["step"]: r["train/loss"] for r in rows if "train/loss" in r}
    assert losses["straight"] == losses["split"]


def test_bad_sft_row_is_a_clear_error(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text(json.dumps({"prompt": "x", "completion": "y"}) + "\n" + json.dumps({"q": 1}))
    code = main(["sft", "--model", str(tiny_dir), "--data", str(data), "sft.eval_data=null"])
    assert code == 2
    err = capsys.readouterr().err
    assert "bad.jsonl row 1" in err and "no 'messages' chat and missing key 'prompt'" in err
