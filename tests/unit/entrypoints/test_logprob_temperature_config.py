"""``algorithm.logprob_temperature``: ``sampling`` (default) is the rollout temperature, 1 for
greedy rollouts; a number fixes it; anything else is refused naming the key. The demo recipes
pin 1.0, the loss their documented figures were measured with (docs/results.md)."""

from __future__ import annotations

import pytest

from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.config.loading import ConfigError
from lightrft.entrypoints.recipes.demo import DEMO_OVERRIDES
from lightrft.entrypoints.recipes.distill import DISTILL_OVERRIDES
from lightrft.entrypoints.recipes.rlhf import GRPO_OVERRIDES
from lightrft.entrypoints.recipes.ttrl import TTRL_OVERRIDES


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, 1.0),  # the default rollout temperature is 1
        ({"rollout.temperature": 0.6}, 0.6),
        ({"rollout.temperature": 0.0}, 1.0),  # greedy: the engine reports temperature-1 log-probs
        ({"rollout.temperature": 0.6, "algorithm.logprob_temperature": 1.0}, 1.0),
        ({"rollout.temperature": 0.6, "algorithm.logprob_temperature": "0.8"}, 0.8),
        ({"rollout.temperature": 0.7, "algorithm.logprob_temperature": "sampling"}, 0.7),
    ],
)
def test_the_loss_temperature_follows_the_rollout_unless_fixed(
    overrides: dict[str, object], expected: float
) -> None:
    settings = load_config(algorithm="grpo", overrides=overrides).to_domain()
    assert settings.algorithm.logprob_temperature == pytest.approx(expected)


@pytest.mark.parametrize("bad", [0, -1.0, "hot"])
def test_a_bad_loss_temperature_is_refused_naming_the_key(bad: object) -> None:
    with pytest.raises(ConfigError, match="algorithm.logprob_temperature"):
        load_config(overrides={"algorithm.logprob_temperature": bad})


@pytest.mark.parametrize(
    "recipe",
    [
        DEMO_OVERRIDES,
        [*DISTILL_OVERRIDES, "teacher.path=teacher"],
        GRPO_OVERRIDES,
        TTRL_OVERRIDES,
    ],
    ids=["demo", "distill", "rlhf", "ttrl"],
)
def test_the_measured_recipes_keep_the_temperature_one_loss(recipe: list[str]) -> None:
    settings = load_config(algorithm="grpo", overrides=recipe).to_domain()
    assert settings.rollout.sampling.temperature != 1.0
    assert settings.algorithm.logprob_temperature == 1.0


def test_a_temperature_schedule_reaches_the_rollout_parameters() -> None:
    overrides = {
        "rollout.temperature_schedule": [[1, 0.8], [6, 0.6]],
        "rollout.temperature": 0.6,
        "algorithm.logprob_temperature": 1.0,
    }
    settings = load_config(algorithm="grpo", overrides=overrides).to_domain()
    schedule = settings.rollout.temperature_schedule
    assert schedule is not None and schedule.points == ((1, 0.8), (6, 0.6))
    assert settings.rollout.sampling.temperature == 0.6
    assert load_config(algorithm="grpo").to_domain().rollout.temperature_schedule is None


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (  # the loss's temperature would follow only the final value
            {"rollout.temperature_schedule": [[1, 0.8], [6, 0.6]], "rollout.temperature": 0.6},
            "algorithm.logprob_temperature to a number",
        ),
        (
            {
                "rollout.temperature_schedule": [[1, 0.8], [6, 0.6]],
                "algorithm.logprob_temperature": 1.0,
            },
            "ends at 0.6 but rollout.temperature is 1.0",
        ),
        (
            {
                "rollout.temperature_schedule": [[4, 0.8], [2, 1.0]],
                "rollout.temperature": 1.0,
                "algorithm.logprob_temperature": 1.0,
            },
            "rollout.temperature_schedule: temperature schedule steps must be",
        ),
        ({"rollout.temperature_schedule": [[0, 0.8]]}, "rollout.temperature_schedule"),
    ],
)
def test_a_bad_temperature_schedule_is_refused_naming_the_key(
    overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(algorithm="grpo", overrides=overrides)
