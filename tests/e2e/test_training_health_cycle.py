"""The training-health monitor in the RL cycle, on fakes that collapse on purpose.

The rule reward is replaced by a script: in training step s the first ``TRAIN_ONES[s]`` of
the 4 samples of every group score 1, the others 0, so ``reward/mean`` is exactly
0.5, 0.75, 0.75, 0, 0, ... The 3-step running means are 2/3 (step 3, the best), 0.5 and
0.25: the drop from the best is 1/6 at step 4 and 5/12 > 0.25 at step 5, where
``reward_drop`` fires. From step 4 every group's rewards are equal, so every group has
all-zero advantages and ``zero_advantage_groups`` fires at step 4.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from structlog.testing import capture_logs

from lightrft.adapters.checkpoint import LocalCheckpointStore
from lightrft.adapters.fakes import InMemoryCheckpointStore
from lightrft.application.params import HealthParams
from lightrft.domain.health_checks import HealthThresholds
from lightrft.domain.types import Completion, RewardResult, RewardSample
from tests.helpers.fake_cycle import FakeRig, build_rig

TRAIN_ONES = {1: 2, 2: 3, 3: 3}  # step -> samples scoring 1 per group of 4; later steps: 0
EVAL_ACCURACY = [0.25, 0.5, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5]  # before training, after step k
LR = 2e-2
# truncation is near 0.8 with the fakes' 4-token budget: only an all-truncated batch fires
THRESHOLDS = HealthThresholds(truncated_fraction=1.0)


class ScriptedReward:
    """Scores by the script above; keeps the policy's and the engine's weights at each
    training call (the policy's before that step's update) and counts evaluations."""

    def __init__(self, rig: FakeRig) -> None:
        self.rig = rig
        self.weights: dict[int, dict[str, torch.Tensor]] = {}
        self.engine_weights: dict[int, dict[str, torch.Tensor]] = {}
        self.evaluations = 0
        rig.rule.score = self.score  # type: ignore[method-assign]

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        if self.rig.cycle.phases.current == "eval_reward":
            correct = round(EVAL_ACCURACY[self.evaluations] * len(samples))
            self.evaluations += 1
            scores = [1.0 if i < correct else 0.0 for i in range(len(samples))]
        else:
            step = self.rig.cycle.state.step + 1
            self.weights[step] = _params(self.rig)
            self.engine_weights[step] = {
                k: v.clone() for k, v in self.rig.engine.named_parameters().items()
            }
            seen: Counter[int] = Counter()
            scores = []
            for sample in samples:
                scores.append(1.0 if seen[sample.group] < TRAIN_ONES.get(step, 0) else 0.0)
                seen[sample.group] += 1
        return RewardResult(torch.tensor(scores))


def _params(rig: FakeRig) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in rig.policy.module.named_parameters()}


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return all(torch.equal(a[k], b[k]) for k in a)


def _rig(
    on_collapse: str = "warn", max_rollbacks: int = 2, **kwargs: object
) -> tuple[FakeRig, ScriptedReward]:
    health = HealthParams(THRESHOLDS, on_collapse, max_rollbacks=max_rollbacks)  # type: ignore[arg-type]
    rig = build_rig("grpo", lr=LR, health=health, **kwargs)  # type: ignore[arg-type]
    return rig, ScriptedReward(rig)


def _signal_logs(logs: Sequence[Mapping[str, Any]]) -> list[tuple[object, object]]:
    return [(e["signal"], e["step"]) for e in logs if e["event"] == "health.signal"]


def test_a_collapsing_reward_is_warned_once_logged_and_summarized() -> None:
    rig, _ = _rig(total_steps=7)
    with capture_logs() as logs:
        rig.cycle.run()
    metrics = dict(rig.tracker.metrics)
    assert [metrics[s]["reward/mean"] for s in range(1, 8)] == [0.5, 0.75, 0.75, 0, 0, 0, 0]
    assert metrics[3]["health/reward_drop"] == 0.0
    assert metrics[4]["health/reward_drop"] == pytest.approx(1 / 6)
    assert metrics[5]["health/reward_drop"] == pytest.approx(5 / 12)
    assert [metrics[s]["health/fired/reward_drop"] for s in range(3, 8)] == [0, 0, 1, 1, 1]
    # the experience maker's new metric: mixed groups learn, equal-reward groups do not
    assert [metrics[s]["advantages/zero_groups_fraction"] for s in range(1, 8)] == [0, 0, 0] + [
        1.0
    ] * 4
    assert "health/reward_drop" not in metrics[2]  # the window is not full yet
    assert metrics[5]["health/alarm"] == 2.0  # reward_drop and zero_advantage_groups
    # one warning per signal, at its onset, not every step it fires
    assert _signal_logs(logs) == [("zero_advantage_groups", 4), ("reward_drop", 5)]
    summary = rig.cycle.health.summary()
    assert [(s["name"], s["step"]) for s in summary["signals"]] == _signal_logs(logs)
    assert summary["signals"][1]["value"] == pytest.approx(5 / 12)
    assert summary["on_collapse"] == "warn" and summary["rollbacks"] == []
    assert rig.strategy.current_lr == LR  # warn changes nothing


def test_rollback_restores_the_best_training_reward_state_and_lowers_the_lr() -> None:
    rig, script = _rig("rollback", total_steps=7)
    with capture_logs() as logs:
        rig.cycle.run(max_steps=5)
    # steps 2 and 3 scored 0.75: the first of them is the best; its state is the one
    # before its update, i.e. the weights that generated step 2's rollouts
    assert rig.cycle.health.guard.best_step == 2
    assert not _same(script.weights[2], script.weights[5])  # training did move the weights
    assert _same(_params(rig), script.weights[2])
    assert rig.strategy.current_lr == pytest.approx(0.5 * LR)
    events = [e for e in logs if e["event"] == "health.rollback"]
    assert len(events) == 1 and events[0]["step"] == 5 and events[0]["restored_step"] == 2
    assert events[0]["signals"] == ["reward_drop"] and events[0]["lr_scale"] == 0.5
    rig.cycle.run(resume=False)  # steps 6-7: reward_drop keeps firing, no new onset
    metrics = dict(rig.tracker.metrics)
    assert metrics[6]["train/lr"] == pytest.approx(0.5 * LR)
    assert [metrics[s]["health/rollbacks"] for s in (4, 5, 7)] == [0.0, 1.0, 1.0]
    # the engine got the restored weights before step 6's rollouts
    assert _same(script.engine_weights[6], script.engine_weights[2])
    assert rig.cycle.health.summary()["rollbacks"] == [
        {
            "step": 5,
            "restored_step": 2,
            "undone_steps": 4,
            "lr_scale": 0.5,
            "signals": ["reward_drop"],
        }
    ]


def test_rollback_ranks_by_held_out_accuracy_when_the_run_evaluates() -> None:
    rig, script = _rig("rollback", total_steps=5, eval_every=1)
    rig.cycle.run()
    # the best evaluation follows step 2: the state after step 2's update, the one that
    # generated step 3's rollouts
    assert rig.cycle.health.guard.best_step == 2
    assert _same(_params(rig), script.weights[3])
    assert rig.strategy.current_lr == pytest.approx(0.5 * LR)


def test_no_rollback_beyond_max_rollbacks() -> None:
    rig, script = _rig("rollback", total_steps=5, max_rollbacks=0)
    with capture_logs() as logs:
        rig.cycle.run()
    skipped = [e for e in logs if e["event"] == "health.rollback_skipped"]
    assert len(skipped) == 1 and "train.max_rollbacks=0" in str(skipped[0]["reason"])
    assert not _same(_params(rig), script.weights[2]) and rig.strategy.current_lr == LR


def test_stop_ends_the_run_at_the_collapse_with_a_checkpoint() -> None:
    store = InMemoryCheckpointStore()
    rig, _ = _rig("stop", total_steps=9, checkpoints=store)
    with capture_logs() as logs:
        rig.cycle.run()
    assert rig.cycle.state.step == 5 and store.latest_step() == 5
    assert not rig.cycle.stopped_early  # an ending, not an interruption (summary written)
    assert rig.cycle.health.summary()["stopped_at"] == 5
    stopped = [e for e in logs if e["event"] == "run.stopped"]
    assert stopped and stopped[0]["reason"] == "train.on_collapse=stop"


def test_an_engine_that_always_hits_the_budget_fires_truncation_once() -> None:
    rig = build_rig("grpo", total_steps=3)
    generate = rig.engine.generate

    def truncating(prompts, sampling):  # type: ignore[no-untyped-def]
        out: list[Completion] = generate(prompts, sampling)
        return [replace(c, finish_reason="length") for c in out]

    rig.engine.generate = truncating  # type: ignore[method-assign]
    with capture_logs() as logs:
        rig.cycle.run()
    metrics = dict(rig.tracker.metrics)
    assert [metrics[s]["health/truncated_fraction"] for s in (1, 2, 3)] == [1.0, 1.0, 1.0]
    assert ("truncation", 1) in _signal_logs(logs)
    assert [s for s, _ in _signal_logs(logs)].count("truncation") == 1


def test_resume_with_rollback_is_bitwise_identical(tmp_path: Path) -> None:
    full, _ = _rig("rollback", total_steps=7, checkpoint_every=2)
    full.cycle.run()
    store = LocalCheckpointStore(tmp_path)  # saved, then loaded with weights_only=True
    first, _ = _rig("rollback", total_steps=7, checkpoint_every=2, checkpoints=store)
    first.cycle.run(max_steps=3)  # the best state (step 2) is in the step-2 checkpoint
    resumed, _ = _rig("rollback", total_steps=7, checkpoint_every=2, checkpoints=store)
    resumed.cycle.run()
    assert _same(_params(resumed), _params(full))
    assert resumed.strategy.current_lr == full.strategy.current_lr == pytest.approx(0.5 * LR)
    keep = ("health/", "reward/mean", "train/")
    for step in range(3, 8):
        want = {k: v for k, v in dict(full.tracker.metrics)[step].items() if k.startswith(keep)}
        got = {k: v for k, v in dict(resumed.tracker.metrics)[step].items() if k.startswith(keep)}
        assert got == want, step
    assert resumed.cycle.health.summary() == full.cycle.health.summary()
