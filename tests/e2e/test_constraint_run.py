"""`lightrft train grpo` with a cost constraint on a rule source (tiny model, seconds): the
constraint metrics are logged, the multiplier follows dual ascent, and it is checkpointed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.helpers.cli_runs import TINY, run_train

SOURCES = "reward.sources=[{type: math}, {type: length, name: cost, weight: 0, factor: 1}]"
# the length source scores 0 .. -1 (DAPO's overlong penalty); as a cost, its negative
# scores sit below any positive limit, so the multiplier falls by lr * limit each step
CONSTRAINT = "reward.constraints=[{source: cost, limit: 0.5, multiplier_lr: 0.25, init: 0.3}]"


@pytest.mark.slow
def test_a_rule_source_as_a_cost(tiny_dir: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_train(tiny_dir, run_dir, *TINY, SOURCES, CONSTRAINT, "checkpoint.every=1")
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    multiplier = 0.3
    for row in rows:
        cost = row["constraint/cost/cost"]
        assert cost == row["reward/cost/mean"]
        multiplier = max(0.0, multiplier + 0.25 * (cost - 0.5))
        assert row["constraint/cost/multiplier"] == multiplier
        assert 0.0 <= row["constraint/cost/violation_rate"] <= 1.0
    state = torch.load(run_dir / "checkpoints" / "step_00000002" / "state.pt", weights_only=False)
    assert state["constraints"] == {"cost": multiplier}
