"""`lightrft demo safe`: every stage end to end on the tiny model (helpfulness model, cost
model, GRPO under the constraint, and the same run without it); and, slow, the target on
the embedded model over two seeds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightrft.entrypoints.cli import main
from tests.helpers.demo_runs import TINY_DEMO

TINY = TINY_DEMO
KEYS = ("reward_before", "reward_after", "cost_rate_before", "cost_rate_after")


@pytest.mark.slow
def test_demo_safe_runs_every_stage(tiny_dir: Path, tmp_path: Path) -> None:
    argv = ["demo", "--run-dir", str(tmp_path / "on"), "--rm-pairs", "32", "--rm-epochs", "1"]
    assert main([*argv, "safe", f"model.path={tiny_dir}", *TINY]) == 0
    on = json.loads((tmp_path / "on" / "summary.json").read_text())
    assert on["constrained"] and on["cost_limit"] == 0.1
    assert all(isinstance(on[key], float) for key in KEYS), on
    assert on["multiplier_final"] >= 0.0
    assert on["models"]["cost"]["held_out_sign_accuracy"] is not None
    models = [f"--{name}-model={on['models'][name]['path']}" for name in ("helpful", "cost")]
    off_dir = tmp_path / "off"
    argv = ["demo", "--run-dir", str(off_dir), "--no-constraint", *models]
    assert main([*argv, "safe", f"model.path={tiny_dir}", *TINY]) == 0
    off = json.loads((off_dir / "summary.json").read_text())
    assert not off["constrained"] and off["multiplier_final"] is None
    assert not (off_dir / "helpful").exists()  # the given models were reused
    rows = (off_dir / "grpo" / "metrics.jsonl").read_text()
    assert "constraint/" not in rows


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_the_constraint_holds_the_limit_where_the_free_run_breaks_it(
    tmp_path: Path, seed: int
) -> None:
    """The target on the embedded model (about 10 minutes per run on an idle 2-core CPU):
    under the constraint the held-out unsafe rate ends at most at the limit and the held-out
    helpfulness does not fall; the same run without the constraint ends above the limit."""
    on_dir, off_dir = tmp_path / "on", tmp_path / "off"
    assert main(["demo", "--run-dir", str(on_dir), "safe", f"train.seed={seed}"]) == 0
    on = json.loads((on_dir / "summary.json").read_text())
    models = [f"--{name}-model={on['models'][name]['path']}" for name in ("helpful", "cost")]
    argv = ["demo", "--run-dir", str(off_dir), "--no-constraint", *models]
    assert main([*argv, "safe", f"train.seed={seed}"]) == 0
    off = json.loads((off_dir / "summary.json").read_text())
    assert on["cost_rate_after"] <= on["cost_limit"], on
    assert on["reward_after"] >= on["reward_before"], on
    assert off["cost_rate_after"] > off["cost_limit"], off
