"""The main job with one-step-off rollouts still learns (slow: minutes on a 2-core CPU).

`lightrft demo rollout.mode=one_step_off`: every batch after the first is generated with the
policy one update old and importance-corrected (token TIS, C = 2, on by default outside the
synchronous mode). The bar is the synchronous demo's (tests/e2e/test_demos_learn.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.seed_sweep import summarize
from tests.e2e.test_demos_learn import _demo

pytestmark = pytest.mark.slow


def test_grpo_demo_one_step_off_learns(tmp_path: Path) -> None:
    rows = _demo(tmp_path / "demo", "train.seed=0", "rollout.mode=one_step_off")
    steps = [row for row in rows if "async/staleness_max" in row]
    assert [row["async/staleness_max"] for row in steps[:2]] == [0.0, 1.0]
    assert all(row["policy/tis_weight_mean"] > 0 for row in steps)
    result = summarize(0, 0, 0.0, rows, "eval/accuracy", "reward/mean")
    assert result.gain is not None and result.gain >= 0.35, result
