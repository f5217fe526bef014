"""Running `lightrft demo` from the e2e tests: the command in a subprocess, and the tiny
sizes the demos' smoke tests share."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from scripts.seed_sweep import read_metrics

TINY_DEMO = [
    "train.total_steps=2",
    "eval.every=2",
    "rollout.prompts_per_step=2",
    "rollout.n_samples_per_prompt=2",
    "rollout.max_new_tokens=6",
    "data.eval.num_builtin=4",
    "eval.max_prompts=4",
    "data.train.num_builtin=16",
]
"""Overrides that shrink a demo's GRPO stage to seconds (smoke tests, not learning)."""


def run_demo(run_dir: Path, *args: str, timeout_s: int = 1200) -> list[dict[str, float]]:
    """`lightrft demo ARGS` into ``run_dir``; asserts it exits 0; its metrics rows."""
    command = [
        sys.executable,
        "-m",
        "lightrft.entrypoints.cli",
        "demo",
        *args,
        f"logging.run_dir={run_dir}",
        "logging.progress=false",
    ]
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return read_metrics(run_dir / "metrics.jsonl")
