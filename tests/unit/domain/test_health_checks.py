"""Each training-health check on hand-made metric sequences: when it fires, and when not."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from lightrft.domain.health_checks import (
    HEALTH_CHECKS,
    Detector,
    EntropyCollapse,
    GradNormBlowup,
    HealthThresholds,
    Limit,
    Reading,
    RewardDrop,
)


def _readings(detector: Detector, values: Sequence[float]) -> list[Reading | None]:
    return [detector.observe(v) for v in values]


def _first_fired(readings: list[Reading | None]) -> int | None:
    """1-based position of the first reading that fired."""
    return next((i + 1 for i, r in enumerate(readings) if r is not None and r.fired), None)


def test_reward_drop_needs_a_full_window_then_compares_with_the_best_mean() -> None:
    # window 3: running means at steps 3..6 are 0.5, 1.4/3, 0.3, 0.1; the best is 0.5
    readings = _readings(RewardDrop(3, 0.25), [0.3, 0.5, 0.7, 0.2, 0.0, 0.1])
    assert readings[:2] == [None, None]
    drops = [r.value for r in readings[2:] if r is not None]
    assert drops == pytest.approx([0.0, 0.5 - 1.4 / 3, 0.2, 0.4])
    # 0.2 is not > 0.25; 0.4 is: it fires at step 6
    assert _first_fired(readings) == 6
    assert readings[5] is not None and "below its best 0.5" in readings[5].detail


def test_reward_drop_does_not_fire_on_a_noisy_but_rising_reward() -> None:
    values = [0.1, 0.3, 0.2, 0.4, 0.3, 0.5, 0.4, 0.6]
    assert _first_fired(_readings(RewardDrop(3, 0.25), values)) is None


def test_reward_drop_ignores_non_finite_rewards() -> None:
    detector = RewardDrop(2, 0.1)
    first, skipped, full = _readings(detector, [1.0, math.nan, 1.0])
    assert first is None and skipped is None  # the NaN did not fill the window
    assert full is not None and full.value == 0.0  # mean of (1, 1) is the best so far
    reading = detector.observe(0.0)  # mean of (1, 0) = 0.5, best 1.0
    assert reading is not None and reading.fired and reading.value == pytest.approx(0.5)


def test_entropy_collapse_relative_to_the_first_steps_and_below_the_floor() -> None:
    # baseline = mean(2.0, 2.2, 1.8) = 2.0; then ratios 0.5, 0.15, 0.09
    readings = _readings(EntropyCollapse(3, 0.1, 0.05), [2.0, 2.2, 1.8, 1.0, 0.3, 0.18])
    assert readings[:3] == [None, None, None]
    assert [r.value for r in readings[3:] if r is not None] == pytest.approx([0.5, 0.15, 0.09])
    assert _first_fired(readings) == 6
    # a low-entropy task: ratio 0.8 of a 0.05 baseline, but below the 0.05-nat floor
    low = _readings(EntropyCollapse(1, 0.1, 0.05), [0.05, 0.04])
    assert low[1] is not None and low[1].fired and low[1].value == pytest.approx(0.8)


def test_grad_norm_blowup_against_the_median_of_non_zero_norms() -> None:
    detector = GradNormBlowup(min_history=3, window=100, ratio=10.0)
    # zeros (no informative group) do not count; the history becomes 1, 2, 3 (median 2)
    readings = _readings(detector, [0.0, 1.0, 0.0, 2.0, 3.0, 19.0, 21.0])
    assert readings[:5] == [None] * 5
    assert readings[5] is not None and readings[5].value == pytest.approx(9.5)
    assert not readings[5].fired
    # history now 1, 2, 3, 19: median 2.5; 21 / 2.5 = 8.4: still fine
    assert readings[6] is not None and readings[6].value == pytest.approx(8.4)
    blown = detector.observe(30.0)  # history 1, 2, 3, 19, 21: median 3; ratio 10 fires
    assert blown is not None and blown.fired and blown.value == pytest.approx(10.0)
    nan = detector.observe(math.nan)
    assert nan is not None and nan.fired and nan.value == math.inf


def test_grad_norm_median_is_over_the_recent_window() -> None:
    detector = GradNormBlowup(min_history=1, window=2, ratio=10.0)
    _readings(detector, [100.0, 1.0, 1.0])  # the 100 has left the window
    reading = detector.observe(10.0)
    assert reading is not None and reading.fired and reading.value == pytest.approx(10.0)


@pytest.mark.parametrize(
    ("value", "fired"), [(0.89, False), (0.9, True), (1.0, True), (math.nan, True)]
)
def test_limit_fires_at_or_above_the_threshold_and_on_non_finite(value: float, fired: bool) -> None:
    reading = Limit(0.9, "x").observe(value)
    assert reading is not None and reading.fired is fired and reading.threshold == 0.9


def test_stateful_detectors_resume_from_their_state() -> None:
    t = HealthThresholds()
    values = [2.0, 1.9, 2.1, 0.5, 1.5, 0.1, 3.0]
    for name in HEALTH_CHECKS:
        check = HEALTH_CHECKS.get(name)
        straight = check.make(t)
        expected = _readings(straight, values)
        first = check.make(t)
        _readings(first, values[:3])
        resumed = check.make(t)
        resumed.load_state_dict(first.state_dict())
        assert _readings(resumed, values[3:]) == expected[3:], name


def test_registry_metrics_and_collapse_signals() -> None:
    assert set(HEALTH_CHECKS.names()) == {
        "reward_drop",
        "entropy_collapse",
        "truncation",
        "kl_blowup",
        "grad_norm_blowup",
        "zero_advantage_groups",
        "logprob_drift",
        "early_entropy_collapse",
    }
    collapse = {n for n in HEALTH_CHECKS if HEALTH_CHECKS.get(n).collapse}
    assert collapse == {"reward_drop", "truncation", "early_entropy_collapse"}
    metrics = [HEALTH_CHECKS.get(n).metric for n in HEALTH_CHECKS]
    assert len(set(metrics)) == len(metrics) and all(m.startswith("health/") for m in metrics)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("reward_window", 0),
        ("reward_drop", 0.0),
        ("entropy_ratio", 1.5),
        ("truncated_fraction", 0.0),
        ("grad_norm_ratio", 0.5),
        ("entropy_floor", -1.0),
    ],
)
def test_thresholds_refuse_bad_values_naming_the_field(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        HealthThresholds(**{field: value})  # type: ignore[arg-type]


def test_truncation_from_the_first_step_warns_and_a_rise_is_a_collapse() -> None:
    """A policy cut at the budget from its first step has no healthier state to return to:
    its readings fire without being a collapse; once the fraction was below the threshold, a
    return above it is one (state survives a resume)."""
    detector = HEALTH_CHECKS.get("truncation").make(HealthThresholds(truncated_fraction=0.9))
    readings = [detector.observe(v) for v in (0.95, 1.0, 0.5)]
    assert [(r.fired, r.collapse) for r in readings if r] == [
        (True, False),
        (True, False),
        (False, True),
    ]
    assert "as from the first step" in readings[0].detail  # type: ignore[union-attr]
    resumed = HEALTH_CHECKS.get("truncation").make(HealthThresholds(truncated_fraction=0.9))
    resumed.load_state_dict(detector.state_dict())
    rose = resumed.observe(0.92)
    assert rose is not None and rose.fired and rose.collapse
