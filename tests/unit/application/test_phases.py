from __future__ import annotations

import pytest

from lightrft.application.phases import DEFAULT_PLAN, PhaseSwitcher, Switch, engine_on_policy_plan


class _Component:
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def switch(self) -> Switch:
        return Switch(
            on=lambda: self.log.append(f"{self.name}.on"),
            off=lambda: self.log.append(f"{self.name}.off"),
        )


def test_phase_switches_follow_the_plan_and_are_measured() -> None:
    log: list[str] = []
    ticks = iter(range(100))
    switcher = PhaseSwitcher(
        {name: _Component(log, name).switch() for name in ("engine", "policy", "reward_models")},
        plan={"rollout": frozenset({"engine"}), "train": frozenset({"policy"})},
        clock=lambda: float(next(ticks)),
    )
    with switcher.phase("rollout"):
        assert switcher.is_awake("engine") and not switcher.is_awake("policy")
    with switcher.phase("train"):
        pass
    with switcher.phase("train"):  # already in place: no switch at all
        pass
    # everything starts awake; sleeping happens before waking
    assert log == ["policy.off", "reward_models.off", "engine.off", "policy.on"]
    metrics = switcher.take_metrics()
    assert metrics == {"time/rollout_s": 1.0, "time/train_s": 2.0}
    assert switcher.take_metrics() == {}


def test_nested_and_unknown_phases_are_refused() -> None:
    switcher = PhaseSwitcher({}, plan={"rollout": frozenset({"engine"})})
    with pytest.raises(ValueError, match="unknown phase 'train'"):
        with switcher.phase("train"):
            pass
    with switcher.phase("rollout"):
        with pytest.raises(RuntimeError, match="inside phase 'rollout'"):
            with switcher.phase("rollout"):
                pass
    with pytest.raises(ValueError, match="unknown components"):
        PhaseSwitcher({}, plan={"rollout": frozenset({"gpu"})})


def test_an_engine_on_the_policy_weights_keeps_the_policy_awake_with_it() -> None:
    plan = engine_on_policy_plan(DEFAULT_PLAN)
    assert plan["rollout"] == {"engine", "policy"}
    assert plan["eval"] == {"engine", "policy"}
    assert plan["weight_sync"] == {"engine", "policy"}
    for phase in ("reward", "reference", "train", "eval_reward"):  # no engine: unchanged
        assert plan[phase] == DEFAULT_PLAN[phase]
