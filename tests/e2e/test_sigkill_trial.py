"""The repeated SIGKILL trial (scripts/sigkill_trial.py), shortened: slow, run with -m slow."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "sigkill_trial.py"


@pytest.mark.slow
def test_repeated_sigkills_end_bitwise_equal(tiny_dir: Path, tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("sigkill_trial", SCRIPT)
    assert spec is not None and spec.loader is not None
    trial = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = trial  # dataclasses look their module up there
    spec.loader.exec_module(trial)
    result = trial.run_trial(tiny_dir, tmp_path, kills=6, steps=12, seed=1)
    assert result.kills == 6 and result.kills_during_checkpoint_write >= 3
    assert result.weights_bitwise_equal and result.metrics_equal, result.mismatches
    assert result.metrics_steps_unique and result.checkpoints_verified


@pytest.mark.slow
def test_sigkills_under_a_cost_constraint_end_bitwise_equal(tiny_dir: Path, tmp_path: Path) -> None:
    """The multipliers of reward.constraints are part of the resumed state: killed and
    resumed, the run logs the same constraint/* metrics and ends with the same weights."""
    spec = importlib.util.spec_from_file_location("sigkill_trial", SCRIPT)
    assert spec is not None and spec.loader is not None
    trial = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = trial
    spec.loader.exec_module(trial)
    extra = (
        "reward.sources=[{type: math}, {type: length, name: cost, weight: 0}]",
        "reward.constraints=[{source: cost, limit: -0.1, multiplier_lr: 0.5, init: 0.5}]",
    )
    result = trial.run_trial(tiny_dir, tmp_path, kills=3, steps=6, seed=2, extra=extra)
    assert result.kills == 3
    assert result.weights_bitwise_equal and result.metrics_equal, result.mismatches
    rows = (tmp_path / "killed" / "metrics.jsonl").read_text()
    assert "constraint/cost/multiplier" in rows
