"""A run forced into the early entropy collapse is caught by the health monitor and handled
as ``train.on_collapse`` says (docs/health.md), on the fakes.

The rule reward is a script: at steps 1-2 two of the 4 samples of every group score 1
(``reward/mean`` 0.5, groups differ); from step 3 every group scores alike, 2 of the 8 groups
all 1 and the others all 0 (``reward/mean`` 0.25, every group with all-zero advantages). From
step 3 the policy's entropy is forced near 0 (the fake's own is about 2.5 nats). Steps 3 and 4
match (entropy < 0.3, reward < 0.6, >= 85% of groups alike), so ``early_entropy_collapse``
fires at step 4; ``reward_drop`` does not (its 3-step mean falls 0.42 -> 0.25, less than 0.25
below the best). The healthy twin converges instead (every group scores 1 from step 3): the
same low entropy at a high reward is not a collapse.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from dataclasses import replace
from typing import Any

import pytest
import torch
from structlog.testing import capture_logs

from lightrft.adapters.fakes import InMemoryCheckpointStore
from lightrft.application.params import HealthParams, RollbackChanges
from lightrft.application.phases import Phase
from lightrft.domain.health_checks import HealthThresholds
from lightrft.domain.ports import PolicyOutput
from lightrft.domain.temperature_schedule import TemperatureSchedule
from lightrft.domain.types import RewardResult, RewardSample
from tests.e2e.test_training_health_cycle import _params, _same
from tests.helpers.fake_cycle import FakeRig, build_rig

LR = 2e-2
COLLAPSE_FROM = 3
SIGNAL = "early_entropy_collapse"
THRESHOLDS = HealthThresholds(truncated_fraction=1.0)  # the fakes' 4-token budget cuts most


class CollapsingRun:
    """The script above: rewards by step, the policy's entropy divided by 100 from
    :data:`COLLAPSE_FROM` on, the policy's weights at each training call kept."""

    def __init__(self, rig: FakeRig, *, healthy: bool = False) -> None:
        self.rig, self.healthy = rig, healthy
        self.weights: dict[int, dict[str, torch.Tensor]] = {}
        rig.rule.score = self.score  # type: ignore[method-assign]
        forward = rig.policy.forward

        def collapsed(
            batch: Any, *, temperature: float = 1.0, with_entropy: bool = False
        ) -> PolicyOutput:
            out = forward(batch, temperature=temperature, with_entropy=with_entropy)
            if out.entropy is None or self.step < COLLAPSE_FROM:
                return out
            return out._replace(entropy=out.entropy / 100)

        rig.policy.forward = collapsed  # type: ignore[method-assign]

    @property
    def step(self) -> int:
        return self.rig.cycle.state.step + 1

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        self.weights.setdefault(self.step, _params(self.rig))
        scores = []
        for i, sample in enumerate(samples):
            if self.step < COLLAPSE_FROM:
                scores.append(float(i % 4 < 2))
            else:
                scores.append(1.0 if self.healthy or sample.group % 8 < 2 else 0.0)
        return RewardResult(torch.tensor(scores))


def _run(
    on_collapse: str, *, healthy: bool = False, algorithm: str = "grpo", **kwargs: Any
) -> tuple[FakeRig, CollapsingRun, list[MutableMapping[str, Any]]]:
    health = HealthParams(THRESHOLDS, on_collapse)  # type: ignore[arg-type]
    rig = build_rig(algorithm, lr=LR, health=health, **kwargs)
    run = CollapsingRun(rig, healthy=healthy)
    with capture_logs() as logs:
        rig.cycle.run()
    return rig, run, logs


def _signals(logs: Sequence[MutableMapping[str, Any]]) -> list[tuple[object, object]]:
    return [(e["signal"], e["step"]) for e in logs if e["event"] == "health.signal"]


def test_the_forced_collapse_is_caught_and_warned_about() -> None:
    rig, _, logs = _run("warn", total_steps=6)
    metrics = dict(rig.tracker.metrics)
    assert [metrics[s]["reward/mean"] for s in range(1, 7)] == [0.5, 0.5] + [0.25] * 4
    assert [metrics[s]["advantages/zero_groups_fraction"] for s in range(1, 7)] == [0, 0] + [
        1.0
    ] * 4
    # grpo: a group's advantages are all 0 exactly when its rewards are all equal
    alike = [metrics[s]["reward/alike_groups_fraction"] for s in range(1, 7)]
    assert alike == [0, 0] + [1.0] * 4
    assert metrics[2]["train/entropy"] > 1.0 > 0.3 > metrics[3]["train/entropy"]
    assert [metrics[s]["health/early_entropy_collapse"] for s in range(1, 7)] == [0, 0, 1, 2, 3, 3]
    assert [metrics[s][f"health/fired/{SIGNAL}"] for s in range(1, 7)] == [0, 0, 0, 1, 1, 1]
    assert (SIGNAL, 4) in _signals(logs) and "reward_drop" not in dict(_signals(logs))
    signal = next(s for s in rig.cycle.health.summary()["signals"] if s["name"] == SIGNAL)
    assert signal["collapse"] and signal["step"] == 4
    assert rig.strategy.current_lr == LR  # warn changes nothing


def test_rollback_restores_the_best_state_and_lowers_the_lr() -> None:
    rig, run, logs = _run("rollback", total_steps=6)
    # steps 1 and 2 both scored 0.5: the first is the best, the state before its update
    assert rig.cycle.health.guard.best_step == 1
    events = [e for e in logs if e["event"] == "health.rollback"]
    assert [(e["step"], e["restored_step"], e["signals"]) for e in events] == [(4, 1, [SIGNAL])]
    # the state after the rollback is step 1's: step 5's rollouts came from it
    assert _same(run.weights[5], run.weights[1]) and not _same(run.weights[4], run.weights[1])
    assert rig.strategy.current_lr == pytest.approx(0.5 * LR)
    assert rig.cycle.health.summary()["rollbacks"][0]["signals"] == [SIGNAL]


CHANGES = RollbackChanges(temperature_delta=0.5, entropy_coef=0.05, clip_eps_high=0.3)


def _temperatures(rig: FakeRig) -> dict[int, float]:
    """The rollout temperature of each step's generate calls (engine spied on)."""
    seen: dict[int, float] = {}
    generate = rig.engine.generate

    def spied(prompts: Any, sampling: Any) -> Any:
        if rig.cycle.phases.current != "eval_generate":
            seen[rig.cycle.state.step + 1] = sampling.temperature
        return generate(prompts, sampling)

    rig.engine.generate = spied  # type: ignore[method-assign]
    return seen


def test_rollback_changes_the_sampling_and_loss_settings_it_names() -> None:
    rig = build_rig(
        "grpo", lr=LR, total_steps=6, health=HealthParams(THRESHOLDS, "rollback", rollback=CHANGES)
    )
    CollapsingRun(rig)
    temperatures = _temperatures(rig)
    with capture_logs() as logs:
        rig.cycle.run()
    assert temperatures == {1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0, 5: 1.5, 6: 1.5}
    metrics = dict(rig.tracker.metrics)
    readings = [
        (
            metrics[s]["health/rollback/temperature"],
            metrics[s]["health/rollback/entropy_coef"],
            metrics[s]["health/rollback/clip_eps_high"],
        )
        for s in range(1, 7)
    ]
    # the loss defaults (grpo: ppo's clip 0.2) until the rollback at step 4, then the changes
    assert readings == [(1.0, 0.0, 0.2)] * 3 + [(1.5, 0.05, 0.3)] * 3
    settings = rig.cycle.settings
    assert settings.algorithm.entropy_coef == 0.05
    assert settings.algorithm.resolved_loss.clip_eps_high == 0.3
    assert rig.cycle.optimizer.algorithm == settings.algorithm == rig.cycle.maker.algorithm
    assert rig.strategy.current_lr == pytest.approx(0.5 * LR)
    (event,) = rig.cycle.health.summary()["rollbacks"]
    assert event["settings"] == {"temperature": 1.5, "entropy_coef": 0.05, "clip_eps_high": 0.3}
    changed = [e for e in logs if e["event"] == "health.rollback_settings"]
    assert [(e["rollbacks"], e["temperature"]) for e in changed] == [(1, 1.5)]


def test_the_changed_settings_survive_a_resume() -> None:
    health = HealthParams(THRESHOLDS, "rollback", rollback=CHANGES)
    full = build_rig("grpo", lr=LR, total_steps=7, health=health)
    CollapsingRun(full)
    full.cycle.run()
    store = InMemoryCheckpointStore()
    first = build_rig(
        "grpo", lr=LR, total_steps=7, health=health, checkpoint_every=5, checkpoints=store
    )
    CollapsingRun(first)
    first.cycle.run(max_steps=5)  # rolled back at step 4, checkpointed at step 5
    resumed = build_rig(
        "grpo", lr=LR, total_steps=7, health=health, checkpoint_every=5, checkpoints=store
    )
    CollapsingRun(resumed)
    temperatures = _temperatures(resumed)
    resumed.cycle.run()
    assert temperatures == {6: 1.5, 7: 1.5}
    for part in ("rollout", "algorithm"):
        assert getattr(resumed.cycle.settings, part) == getattr(full.cycle.settings, part)
    assert resumed.cycle.settings.rollout.sampling.temperature == 1.5
    assert _same(_params(resumed), _params(full))
    for step in (6, 7):
        want = dict(full.tracker.metrics)[step]
        got = dict(resumed.tracker.metrics)[step]
        keep = [k for k in want if k.startswith(("health/", "reward/", "train/"))]
        assert {k: got[k] for k in keep} == {k: want[k] for k in keep}, step


def test_a_rollback_with_nothing_named_keeps_the_settings() -> None:
    rig, _, _ = _run("rollback", total_steps=6)
    assert rig.cycle.settings.rollout.sampling.temperature == 1.0
    assert rig.cycle.settings.algorithm.entropy_coef == 0.0
    assert not any(k.startswith("health/rollback/") for k in dict(rig.tracker.metrics)[6])
    assert "settings" not in rig.cycle.health.summary()["rollbacks"][0]


def test_stop_ends_the_run_at_the_collapse_with_a_checkpoint() -> None:
    store = InMemoryCheckpointStore()
    rig, _, logs = _run("stop", total_steps=8, checkpoints=store)
    assert rig.cycle.state.step == 4 and store.latest_step() == 4
    assert rig.cycle.health.summary()["stopped_at"] == 4
    stopped = [e for e in logs if e["event"] == "run.stopped"]
    assert stopped and stopped[0]["reason"] == "train.on_collapse=stop"


def test_the_same_low_entropy_at_a_high_reward_is_a_convergence_not_a_collapse() -> None:
    store = InMemoryCheckpointStore()
    rig, _, logs = _run("stop", healthy=True, total_steps=6, checkpoints=store)
    metrics = dict(rig.tracker.metrics)
    assert [metrics[s]["reward/mean"] for s in range(3, 7)] == [1.0] * 4
    assert metrics[3]["train/entropy"] < 0.3
    assert all(metrics[s][f"health/fired/{SIGNAL}"] == 0 for s in range(1, 7))
    assert rig.cycle.state.step == 6 and rig.cycle.health.summary()["stopped_at"] is None


@pytest.mark.parametrize(
    ("changes", "key"),
    [(CHANGES, "temperature_delta"), (RollbackChanges(redo_steps=True), "redo_steps")],
)
def test_a_rollback_change_is_refused_with_a_separate_rollout_producer(
    changes: RollbackChanges, key: str
) -> None:
    def producer_feed(cycle: Any) -> Any:
        raise AssertionError("not reached: the settings are refused first")

    health = HealthParams(THRESHOLDS, "rollback", rollback=changes)
    with pytest.raises(ValueError, match=f"{key} needs the colocated placement"):
        build_rig("grpo", health=health, feed=producer_feed)


REDO = HealthParams(
    THRESHOLDS, "rollback", rollback_lr_factor=1.0, rollback=RollbackChanges(redo_steps=True)
)


def _restarting_rig(**kwargs: Any) -> tuple[FakeRig, CollapsingRun]:
    """Held-out evaluation only before step 1 and after the last step, so the rollback at
    step 4 returns to the start (the initial policy is the best evaluated state)."""
    rig = build_rig("grpo", lr=LR, total_steps=6, eval_every=100, health=REDO, **kwargs)
    return rig, CollapsingRun(rig)


def test_redo_steps_takes_the_undone_steps_again() -> None:
    rig, run = _restarting_rig()
    rig.cycle.run()
    (event,) = rig.cycle.health.summary()["rollbacks"]
    # back to the start at step 4: the updates of steps 1-4 are undone, so 4 more steps
    assert (event["step"], event["restored_step"], event["undone_steps"]) == (4, 0, 4)
    assert rig.cycle.state.step == rig.cycle.last_step == 10
    metrics = dict(rig.tracker.metrics)
    assert sorted(metrics) == list(range(11))
    # the held-out evaluation comes after the extended last step, not after step 6
    assert "eval/accuracy" in metrics[10] and "eval/accuracy" not in metrics[6]
    # step 5's rollouts came from the initial weights (those that generated step 1's)
    assert _same(run.weights[5], run.weights[1]) and not _same(run.weights[4], run.weights[1])


def test_without_redo_steps_the_run_ends_at_total_steps() -> None:
    health = replace(REDO, rollback=RollbackChanges())
    rig = build_rig("grpo", lr=LR, total_steps=6, eval_every=100, health=health)
    CollapsingRun(rig)
    rig.cycle.run()
    assert rig.cycle.health.summary()["rollbacks"][0]["undone_steps"] == 4
    assert rig.cycle.state.step == rig.cycle.last_step == 6


def test_the_redone_steps_survive_a_resume() -> None:
    full, _ = _restarting_rig()
    full.cycle.run()
    store = InMemoryCheckpointStore()
    first, _ = _restarting_rig(checkpoint_every=5, checkpoints=store)
    first.cycle.run(max_steps=5)  # rolled back at step 4, checkpointed at step 5
    resumed, _ = _restarting_rig(checkpoint_every=5, checkpoints=store)
    resumed.cycle.run()
    assert resumed.cycle.state.step == 10
    assert sorted(dict(resumed.tracker.metrics)) == list(range(6, 11))
    assert _same(_params(resumed), _params(full))


def test_the_action_follows_only_the_signals_named() -> None:
    health = HealthParams(THRESHOLDS, "rollback", on_collapse_signals=("reward_drop",))
    rig = build_rig("grpo", lr=LR, total_steps=6, health=health)
    CollapsingRun(rig)
    with capture_logs() as logs:
        rig.cycle.run()
    assert (SIGNAL, 4) in _signals(logs)  # still warned about
    assert rig.cycle.health.summary()["rollbacks"] == []
    assert rig.strategy.current_lr == LR


@pytest.mark.parametrize(("rank_by", "restored"), [("auto", 0), ("reward", 1)])
def test_a_run_that_evaluates_rarely_can_rank_its_rollback_by_training_reward(
    rank_by: str, restored: int
) -> None:
    """Held-out evaluation only before step 1 and after the last step: ranked by it, the
    rollback at step 4 returns to the start; ranked by training reward, to step 1's state."""
    health = HealthParams(THRESHOLDS, "rollback", rollback_rank_by=rank_by)  # type: ignore[arg-type]
    rig = build_rig("grpo", lr=LR, total_steps=6, eval_every=10, health=health)
    CollapsingRun(rig)
    with capture_logs() as logs:
        rig.cycle.run()
    events = [e for e in logs if e["event"] == "health.rollback"]
    assert [(e["step"], e["restored_step"]) for e in events] == [(4, restored)]
    assert events[0]["ranked_by"] == ("eval/accuracy" if rank_by == "auto" else "reward/mean")


def _scheduled(rig: FakeRig, points: list[list[float]]) -> None:
    """``rig``'s run with ``rollout.temperature_schedule=points`` (its rollout temperature the
    schedule's last value, as the config requires)."""
    schedule = TemperatureSchedule.of(points)
    settings = rig.cycle.settings
    sampling = replace(settings.rollout.sampling, temperature=schedule.final)
    rollout = replace(settings.rollout, sampling=sampling, temperature_schedule=schedule)
    rig.cycle.settings = replace(settings, rollout=rollout)


def test_a_temperature_schedule_sets_each_steps_sampling_temperature() -> None:
    rig = build_rig("grpo", lr=LR, total_steps=5, eval_every=5)
    _scheduled(rig, [[1, 1.0], [3, 0.5]])
    calls: list[tuple[str, int, float]] = []
    generate = rig.engine.generate

    def spied(prompts: Any, sampling: Any) -> Any:
        calls.append((rig.cycle.phases.current, rig.cycle.state.step + 1, sampling.temperature))
        return generate(prompts, sampling)

    rig.engine.generate = spied  # type: ignore[method-assign]
    rig.cycle.run()
    temperatures = {step: t for phase, step, t in calls if phase != Phase.EVAL}
    evaluated = [t for phase, _, t in calls if phase == Phase.EVAL]
    assert temperatures == {1: 1.0, 2: 0.75, 3: 0.5, 4: 0.5, 5: 0.5}
    metrics = dict(rig.tracker.metrics)
    assert [metrics[s]["rollout/temperature"] for s in range(1, 6)] == [1.0, 0.75, 0.5, 0.5, 0.5]
    # the rollout's own entropy estimate is logged every step, and is lower when colder
    nll = [metrics[s]["rollout/sampled_nll"] for s in range(1, 6)]
    assert all(v > 0 for v in nll) and nll[0] > nll[4]
    assert evaluated and set(evaluated) == {0.0}  # evaluation keeps its own (greedy) sampling


def test_a_rollback_adds_its_temperature_change_to_the_schedule() -> None:
    rig = build_rig(
        "grpo", lr=LR, total_steps=6, health=HealthParams(THRESHOLDS, "rollback", rollback=CHANGES)
    )
    _scheduled(rig, [[1, 1.2], [5, 1.0]])
    CollapsingRun(rig)
    temperatures = _temperatures(rig)
    rig.cycle.run()
    # 1.2 -> 1.0 over steps 1-5; the rollback at step 4 adds 0.5 from step 5 on
    assert {s: round(t, 10) for s, t in temperatures.items()} == {
        1: 1.2,
        2: 1.15,
        3: 1.1,
        4: 1.05,
        5: 1.5,
        6: 1.5,
    }


def test_a_global_baseline_collapse_is_judged_on_rewards_alike() -> None:
    # reinforce_pp whitens over the batch: no advantage is 0, yet every group scores alike
    rig, _, logs = _run("warn", total_steps=6, algorithm="reinforce_pp")
    metrics = dict(rig.tracker.metrics)
    assert [metrics[s]["advantages/zero_groups_fraction"] for s in range(3, 7)] == [0.0] * 4
    assert [metrics[s]["reward/alike_groups_fraction"] for s in range(3, 7)] == [1.0] * 4
    assert (SIGNAL, 4) in _signals(logs)


def test_a_collapse_at_an_evaluation_step_returns_to_a_state_from_before_it() -> None:
    """Each evaluation scores higher than the one before, so the state evaluated at the
    collapse's step would be the best: the rollback is judged before that evaluation and
    returns to step 2's, and the evaluation then measures the restored weights."""
    health = HealthParams(THRESHOLDS, "rollback")
    rig = build_rig("grpo", lr=LR, total_steps=6, eval_every=2, health=health)
    run = CollapsingRun(rig)
    evaluated: dict[int, dict[str, torch.Tensor]] = {}

    def rising() -> dict[str, float]:
        step = rig.cycle.state.step
        evaluated[step] = _params(rig)
        return {"eval/accuracy": step / 10}

    rig.cycle.evaluate = rising  # type: ignore[method-assign]
    rig.cycle.run()
    (event,) = rig.cycle.health.summary()["rollbacks"]
    assert (event["step"], event["restored_step"], event["undone_steps"]) == (4, 2, 2)
    assert _same(evaluated[4], evaluated[2]) and _same(run.weights[5], evaluated[2])
