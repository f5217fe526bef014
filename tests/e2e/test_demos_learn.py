"""The built-in jobs learn on more than one seed (slow: minutes per run on a 2-core CPU).

Each run is the job's own command line as a user types it (`lightrft demo ...`), with only
the seed and the run directory set; the figures are read back from the run's metrics the way
``scripts/seed_sweep.py`` reads them for docs/results.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.seed_sweep import read_metrics, summarize

pytestmark = pytest.mark.slow


def _demo(run_dir: Path, *args: str) -> list[dict[str, float]]:
    command = [sys.executable, "-m", "lightrft.entrypoints.cli", "demo", *args,
               f"logging.run_dir={run_dir}", "logging.progress=false"]
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return read_metrics(run_dir / "metrics.jsonl")


@pytest.mark.parametrize("seed", [0, 4])
def test_grpo_demo_learns(tmp_path: Path, seed: int) -> None:
    """Held-out greedy accuracy rises by >= 0.35 and training ends near its best level (the
    mean reward of the last 3 steps within 0.1 of the best 3-step mean: single steps are
    means over 8 prompts, too noisy to compare one by one)."""
    rows = _demo(tmp_path / "demo", f"train.seed={seed}")
    result = summarize(seed, 0, 0.0, rows, "eval/accuracy", "reward/mean")
    assert result.gain is not None and result.gain >= 0.35, result
    assert result.best_smooth is not None and result.final_smooth is not None
    assert result.final_smooth >= result.best_smooth - 0.1, result
