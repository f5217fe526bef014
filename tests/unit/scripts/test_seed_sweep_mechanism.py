"""``scripts/seed_sweep.py --mechanism``: what a run's training looked like, per seed."""

from __future__ import annotations

from scripts.seed_sweep import mechanism, mechanism_table


def _row(step: int, **metrics: float) -> dict[str, float]:
    return {"step": float(step), **metrics}


def test_mechanism_reads_the_collapse_from_the_metric_rows() -> None:
    rows = [
        _row(0, **{"eval/accuracy": 0.16}),
        _row(1, **{"train/entropy": 0.9, "advantages/zero_groups_fraction": 1.0}),
        _row(
            4,
            **{
                "train/entropy": 0.3,
                "advantages/zero_groups_fraction": 0.75,
                "response_length/mean": 14.0,
                "reward/mean": 0.4,
            },
        ),
        _row(
            5,
            **{
                "train/entropy": 0.2,
                "advantages/zero_groups_fraction": 1.0,
                "response_length/mean": 12.0,
                "reward/mean": 0.5,
                "health/fired/early_entropy_collapse": 1.0,
            },
        ),
        _row(
            6,
            **{
                "advantages/zero_groups_fraction": 1.0,
                "reward/mean": 0.3,
                "health/fired/early_entropy_collapse": 1.0,
            },
        ),
    ]
    got = mechanism(rows)
    # steps 4-6 only; step 1 (every group alike before anything is earned) is left out
    assert got == {
        "min_entropy": 0.2,
        "min_entropy_step": 5.0,
        "alike": (0.75 + 1.0 + 1.0) / 3,
        "length": 13.0,
        "reward": (0.4 + 0.5 + 0.3) / 3,
        "collapse_step": 5.0,
    }
    assert mechanism_table([9], [rows])[-1] == "| 9 | 0.20 (5) | 0.92 | 13.0 | 0.40 | step 5 |"


def test_a_run_without_the_metrics_shows_dashes() -> None:
    assert mechanism_table([3], [[_row(0)]])[-1] == "| 3 | - | - | - | - | no |"
