"""The `lightrft` console script on a tiny random HF model: errors, train, kill, resume, report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from lightrft.entrypoints.cli import main
from tests.helpers.cli_runs import train_grpo_command

TINY_RUN = [
    "train.total_steps=4",
    "rollout.max_new_tokens=6",
    "rollout.prompts_per_step=2",
    "rollout.n_samples_per_prompt=2",
    "eval.max_prompts=4",
    "optim.lr=1e-3",
    "data.train.num_builtin=16",
    "data.eval.num_builtin=4",
    "logging.progress=false",
]


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["train", "--help"],
        ["eval", "--help"],
        ["config", "show", "--help"],
        ["report", "--help"],
        ["demo", "--help"],
        ["sft", "--help"],
        ["samples", "--help"],
        ["checkpoints", "verify", "--help"],
    ],
)
def test_every_subcommand_has_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 0
    assert "usage: lightrft" in capsys.readouterr().out


def test_config_show_prints_the_resolved_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "show", "dapo", "optim.lr=3e-6"]) == 0
    out = capsys.readouterr().out
    assert "policy_loss: dapo" in out and "lr: 3.0e-06" in out and "dynamic_sampling: true" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "grpo", "algorithm.kl_estimator=k9"], "algorithm.kl_estimator: Input should be"),
        (["train", "grpo", "rollout.colour=1"], "rollout.colour: unknown key"),
        (["train", "grpo", "--config", "/nonexistent/run.yaml"], "does not exist"),
        (["train", "grpo", "data.train.path=/nonexistent/train.jsonl"], "does not exist"),
        (["report", "/nonexistent/run"], "does not exist"),
    ],
)
def test_bad_input_exits_non_zero_naming_the_problem(
    argv: list[str],
    message: str,
    tiny_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the tiny model has 128 positions: a budget that fits, so the named problem is the one met
    run = [f"model.path={tiny_dir}", f"logging.run_dir={tmp_path}", "rollout.max_new_tokens=16"]
    extra = run if argv[0] == "train" else []
    assert main(argv + extra) == 2
    assert message in capsys.readouterr().err


def test_malformed_dataset_names_file_row_and_key(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "train.jsonl"
    data.write_text('{"prompt": "1+1?", "reference": "2"}\n{"question": "no prompt key"}\n')
    code = main(
        [
            "train",
            "grpo",
            f"model.path={tiny_dir}",
            f"data.train.path={data}",
            f"logging.run_dir={tmp_path / 'run'}",
            *TINY_RUN,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "train.jsonl" in err and "row 1" in err and "'prompt'" in err


def _weights(run_dir: Path) -> dict[str, torch.Tensor]:
    return load_file(str(run_dir / "final_model" / "model.safetensors"))


def _metrics(run_dir: Path) -> dict[int, dict[str, float]]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    volatile = ("time", "throughput/", "memory/")
    return {r["step"]: {k: v for k, v in r.items() if not k.startswith(volatile)} for r in rows}


def _train_command(tiny_dir: Path, run_dir: Path, *extra: str) -> list[str]:
    return train_grpo_command(
        tiny_dir, run_dir, "checkpoint.every=2", "eval.every=2", *TINY_RUN, *extra
    )


def test_kill_and_resume_ends_bitwise_equal_to_an_uninterrupted_run(
    tiny_dir: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "OMP_NUM_THREADS": "1"}
    full = tmp_path / "full"
    subprocess.run(_train_command(tiny_dir, full), env=env, check=True, capture_output=True)

    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        _train_command(tiny_dir, killed),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 300
    while not (killed / "checkpoints" / "step_00000002").exists():
        assert proc.poll() is None, "the run ended before its first checkpoint"
        assert time.time() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (killed / "final_model").exists()
    subprocess.run(
        _train_command(tiny_dir, killed, "--resume"), env=env, check=True, capture_output=True
    )
    expected, got = _weights(full), _weights(killed)
    assert expected.keys() == got.keys()
    for name in expected:
        assert torch.equal(expected[name], got[name]), name
    full_metrics, resumed_metrics = _metrics(full), _metrics(killed)
    for step in (3, 4):
        assert resumed_metrics[step] == full_metrics[step]

    assert main(["report", str(full)]) == 0
    html = (full / "report" / "report.html").read_text()
    assert "reward" in html and (full / "report").glob("*.png")
    assert any(p.suffix == ".png" for p in (full / "report").iterdir())


def test_eval_writes_a_json_report(tiny_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    code = main(
        [
            "eval",
            "--model",
            str(tiny_dir),
            "--output",
            str(out),
            "eval.max_prompts=3",
            "eval.n_samples=2",
            "eval.temperature=1.0",
            "rollout.max_new_tokens=4",
            "data.eval.num_builtin=3",
        ]
    )
    assert code == 0
    report = json.loads(out.read_text())
    assert report["n_samples"] == 2
    metrics = report["metrics"]
    assert metrics["eval/prompts"] == 3.0
    assert 0.0 <= metrics["eval/pass@1"] <= metrics["eval/pass@2"] <= 1.0
