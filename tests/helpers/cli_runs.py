"""Command lines for `lightrft train grpo` / `lightrft sft` runs of the e2e tests (as a
subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

TINY = [
    "train.total_steps=2",
    "rollout.max_new_tokens=4",
    "rollout.prompts_per_step=2",
    "rollout.n_samples_per_prompt=2",
    "data.train.num_builtin=8",
    "data.eval=null",
    "logging.progress=false",
    "checkpoint.export_final=false",
]
"""Overrides of a seconds-long run on the tiny model: 2 steps of 2 prompts x 2 samples of at
most 4 tokens, no evaluation, no progress bar, no final export."""


def train_grpo_command(model_dir: Path, run_dir: Path, *overrides: str) -> list[str]:
    """`python -m lightrft.entrypoints.cli train grpo` on ``model_dir`` writing ``run_dir``."""
    return [
        sys.executable,
        "-m",
        "lightrft.entrypoints.cli",
        "train",
        "grpo",
        f"model.path={model_dir}",
        f"logging.run_dir={run_dir}",
        *overrides,
    ]


def run_command(command: list[str]) -> None:
    """Runs ``command`` single-threaded; fails the test with its stderr tail."""
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def run_train(model_dir: Path, run_dir: Path, *overrides: str) -> None:
    """Runs :func:`train_grpo_command`."""
    run_command(train_grpo_command(model_dir, run_dir, *overrides))


def run_sft(model_dir: Path, data: Path, run_dir: Path, *overrides: str) -> None:
    """Runs `python -m lightrft.entrypoints.cli sft` on ``data`` writing ``run_dir``."""
    cli = [sys.executable, "-m", "lightrft.entrypoints.cli", "sft"]
    paths = ["--model", str(model_dir), "--data", str(data), "--run-dir", str(run_dir)]
    run_command([*cli, *paths, *overrides])


def final_weights(run_dir: Path) -> dict[str, torch.Tensor]:
    """The tensors of a run's ``final_model``."""
    return load_file(str(run_dir / "final_model" / "model.safetensors"))


def max_weight_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """Largest absolute difference between two state dicts with the same keys."""
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)
