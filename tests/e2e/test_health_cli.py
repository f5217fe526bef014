"""`lightrft train` on a tiny random model: the health entry of summary.json and the warning.

The tiny random model almost never samples EOS within 4 tokens, so with
``train.health.truncated_fraction=0.5`` the truncation signal fires at step 1. Cut from the
first step on, it is a warning, not a collapse: ``train.on_collapse=stop`` lets the run go on
(the stop itself, with its checkpoint, is tested on fakes that collapse on purpose in
tests/e2e/test_training_health_cycle.py).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from lightrft.adapters.checkpoint import LocalCheckpointStore
from tests.helpers.cli_runs import TINY, train_grpo_command


def test_truncation_from_the_first_step_warns_without_stopping(
    tiny_dir: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    command = train_grpo_command(
        tiny_dir,
        run_dir,
        *TINY,
        "checkpoint.every=10",
        "train.health.truncated_fraction=0.5",
        "train.on_collapse=stop",
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    err = done.stderr
    assert done.returncode == 0, err[-3000:]
    warnings = [line for line in err.splitlines() if "health.signal" in line]
    assert sum("signal=truncation" in line for line in warnings) == 1
    assert "truncation at step 1" in err and "as from the first step" in err
    assert "run.stopped" not in err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 2
    health = summary["health"]
    assert health["on_collapse"] == "stop" and health["stopped_at"] is None
    truncation = [s for s in health["signals"] if s["name"] == "truncation"]
    assert truncation[0]["step"] == 1 and truncation[0]["threshold"] == 0.5
    assert truncation[0]["collapse"] is False
    assert LocalCheckpointStore(run_dir / "checkpoints").steps() == [2]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["health/fired/truncation"] == 1.0
