"""``train.health`` / ``train.on_collapse``: defaults, choices, plumbing to HealthParams."""

from __future__ import annotations

from typing import get_args

import pytest

from lightrft.application.collapse_rollback import COLLAPSE_ACTIONS
from lightrft.application.params import ON_COLLAPSE_CHOICES, HealthParams, RollbackChanges
from lightrft.domain.health_checks import HealthThresholds
from lightrft.entrypoints.config.health_section import HealthConfig
from lightrft.entrypoints.config.loading import ConfigError, load_config
from lightrft.entrypoints.config.sections import TrainConfig


def test_on_collapse_choices_equal_the_action_registry() -> None:
    literal = TrainConfig.model_fields["on_collapse"].annotation
    assert set(get_args(literal)) == set(COLLAPSE_ACTIONS.choices()) == set(ON_COLLAPSE_CHOICES)


def test_defaults_are_the_domain_thresholds() -> None:
    assert HealthConfig().thresholds() == HealthThresholds()  # type: ignore[call-arg]
    assert load_config().to_domain().health == HealthParams()


def test_overrides_reach_the_cycle_settings() -> None:
    config = load_config(
        overrides=[
            "train.on_collapse=rollback",
            "train.rollback_lr_factor=0.25",
            "train.max_rollbacks=1",
            "train.health.reward_drop=0.1",
            "train.health.truncated_fraction=1.0",
        ]
    )
    assert config.to_domain().health == HealthParams(
        HealthThresholds(reward_drop=0.1, truncated_fraction=1.0), "rollback", 0.25, 1
    )


def test_collapse_rollback_changes_reach_the_cycle_settings() -> None:
    overrides = [
        "train.collapse_rollback.temperature_delta=0.2",
        "train.collapse_rollback.entropy_coef=0.01",
        "train.collapse_rollback.clip_eps_high=0.28",
    ]
    tied = load_config(overrides=overrides).to_domain().health.rollback
    assert tied == RollbackChanges(0.2, 0.01, 0.28, loss_temperature_follows=True)
    fixed = load_config(overrides=[*overrides, "algorithm.logprob_temperature=1.0"])
    assert not fixed.to_domain().health.rollback.loss_temperature_follows
    ranked = load_config(overrides=["train.rollback_rank_by=reward"]).to_domain().health
    assert ranked.rollback_rank_by == "reward"
    redone = load_config(overrides=["train.collapse_rollback.redo_steps=true"]).to_domain()
    assert redone.health.rollback == RollbackChanges(redo_steps=True)


def test_the_signals_acted_on_reach_the_cycle_settings() -> None:
    config = load_config(overrides=["train.on_collapse_signals=[early_entropy_collapse]"])
    assert config.to_domain().health.on_collapse_signals == ("early_entropy_collapse",)
    assert load_config().to_domain().health.on_collapse_signals is None


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("train.on_collapse=explode", "train.on_collapse: Input should be 'warn'"),
        ("train.health.entropy_ratio=2", "train.health.entropy_ratio: Input should be less"),
        ("train.rollback_lr_factor=0", "train.rollback_lr_factor: Input should be greater"),
        ("train.health.colour=red", "train.health.colour: unknown key"),
        ("train.rollback_rank_by=eval", "train.rollback_rank_by: Input should be 'auto'"),
        (
            "train.on_collapse_signals=[entropy_collapse]",
            "train.on_collapse_signals: Value error, expected one or more of "
            "early_entropy_collapse, reward_drop, truncation",
        ),
        ("train.on_collapse_signals=[]", "train.on_collapse_signals: Value error, expected"),
        (
            "train.collapse_rollback.temperature_delta=-0.1",
            "train.collapse_rollback.temperature_delta: Input should be greater",
        ),
    ],
)
def test_bad_values_name_the_key(override: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(overrides=[override])
    assert message in str(info.value)


def test_early_collapse_thresholds_reach_the_monitor_and_the_window_is_checked() -> None:
    config = load_config(
        overrides=[
            "train.health.early_collapse_entropy=0.5",
            "train.health.early_collapse_reward=0.4",
            "train.health.early_collapse_alike=0.75",
            "train.health.early_collapse_steps=3",
            "train.health.early_collapse_window=5",
        ]
    )
    assert config.to_domain().health.thresholds == HealthThresholds(
        early_collapse_entropy=0.5,
        early_collapse_reward=0.4,
        early_collapse_alike=0.75,
        early_collapse_steps=3,
        early_collapse_window=5,
    )
    with pytest.raises(ConfigError, match="early_collapse_window=3 must be at least"):
        load_config(overrides=["train.health.early_collapse_steps=4"])


@pytest.mark.parametrize("names", [(), ("entropy_collapse",), ("reward_drop", "colour")])
def test_the_service_refuses_signals_that_are_not_collapse_signals(names: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="on_collapse_signals must name collapse signals"):
        HealthParams(on_collapse_signals=names)


def test_a_rollback_change_with_a_separate_producer_is_refused_at_load() -> None:
    for change in (
        "train.collapse_rollback.redo_steps=true",
        "train.collapse_rollback.temperature_delta=0.1",
    ):
        key = change.split("=")[0]
        with pytest.raises(ConfigError, match=f"{key} needs rollout.placement=colocated"):
            load_config(overrides=["train.on_collapse=rollback", "rollout.placement=split", change])
        # only a rollback applies them
        load_config(overrides=["rollout.placement=split", change])
