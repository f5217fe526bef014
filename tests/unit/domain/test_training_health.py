"""HealthMonitor: health/* metrics, onsets reported once per episode, skipped checks, state."""

from __future__ import annotations

from lightrft.domain.training_health import HealthMonitor, HealthThresholds

TRUNCATED = "response_length/truncated_fraction"


def test_onset_is_reported_once_while_the_signal_keeps_firing() -> None:
    monitor = HealthMonitor()
    fractions = [0.5, 0.95, 1.0, 0.5, 0.92]
    reports = [monitor.observe(step, {TRUNCATED: f}) for step, f in enumerate(fractions, 1)]
    fired = [[s.name for s in r.fired] for r in reports]
    onsets = [[(s.name, s.step) for s in r.onsets] for r in reports]
    assert fired == [[], ["truncation"], ["truncation"], [], ["truncation"]]
    assert onsets == [[], [("truncation", 2)], [], [], [("truncation", 5)]]
    assert [r.metrics["health/alarm"] for r in reports] == [0.0, 1.0, 1.0, 0.0, 1.0]
    assert reports[1].metrics["health/truncated_fraction"] == 0.95
    assert reports[1].metrics["health/fired/truncation"] == 1.0
    assert reports[0].metrics["health/fired/truncation"] == 0.0
    assert [(s.name, s.step) for s in monitor.onsets] == [("truncation", 2), ("truncation", 5)]
    signal = reports[1].onsets[0]
    assert signal.collapse and signal.threshold == 0.9 and signal.value == 0.95
    assert signal.message.startswith("truncation at step 2: ")


def test_checks_without_their_metric_are_skipped() -> None:
    report = HealthMonitor().observe(1, {"unrelated/metric": 1.0})
    assert report.metrics == {"health/alarm": 0.0} and report.fired == ()


def test_kl_reads_the_experience_kl_else_the_loss_kl() -> None:
    monitor = HealthMonitor(HealthThresholds(kl=0.5))
    both = monitor.observe(1, {"kl/mean": 0.1, "train/kl": 0.9})
    assert both.metrics["health/kl"] == 0.1 and not both.fired
    loss_only = monitor.observe(2, {"train/kl": 0.9})
    assert loss_only.metrics["health/kl"] == 0.9
    assert [s.name for s in loss_only.onsets] == ["kl_blowup"]


def test_several_signals_at_one_step() -> None:
    report = HealthMonitor().observe(
        4,
        {TRUNCATED: 1.0, "advantages/zero_groups_fraction": 0.95, "rollout/kl_k3": 0.5},
    )
    assert {s.name for s in report.onsets} == {
        "truncation",
        "zero_advantage_groups",
        "logprob_drift",
    }
    assert report.metrics["health/alarm"] == 3.0
    # truncation at the first step it is seen: a warning, no collapse (never was below)
    assert {s.name for s in report.onsets if s.collapse} == set()


def test_state_dict_resumes_identically() -> None:
    steps = [
        {"reward/mean": r, "train/entropy": e, "train/grad_norm": g, TRUNCATED: f}
        for r, e, g, f in [
            (0.2, 2.0, 1.0, 0.1),
            (0.6, 2.0, 2.0, 0.95),
            (0.7, 2.0, 1.0, 0.95),
            (0.0, 0.1, 40.0, 0.2),
            (0.0, 0.1, 1.0, 0.2),
        ]
    ]
    straight = HealthMonitor()
    expected = [straight.observe(i + 1, m) for i, m in enumerate(steps)]
    first = HealthMonitor()
    for i, m in enumerate(steps[:3]):
        first.observe(i + 1, m)
    resumed = HealthMonitor()
    resumed.load_state_dict(first.state_dict())
    assert [resumed.observe(i + 4, m) for i, m in enumerate(steps[3:])] == expected[3:]
    assert resumed.onsets == straight.onsets
    names = {s.name for r in expected for s in r.onsets}
    assert names == {"truncation", "entropy_collapse", "grad_norm_blowup", "reward_drop"}
