"""A plugin module registers an advantage estimator and a policy loss from its own file; a
config that names the module under ``plugins`` validates with their names, translates, and
the registered functions compute; an unregistered name lists the registered ones."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from lightrft.domain.advantages import ADVANTAGE_ESTIMATORS, AdvantageInputs, compute_advantages
from lightrft.domain.aggregation import LossNormalizer
from lightrft.domain.policy_losses import POLICY_LOSSES, PolicyLossInputs, compute_policy_loss
from lightrft.entrypoints.config.loading import ConfigError, load_config
from lightrft.entrypoints.config.sections import AlgorithmConfig

PLUGIN = "mean_baseline_plugin"
ESTIMATOR = "mean_baseline"
LOSS = "plain_pg"

PLUGIN_SOURCE = '''
"""A mean-baseline estimator, A_i = r_i - mean of r over i's group, on every response token,
and the plain policy gradient -A * log p."""

import torch

from lightrft.domain.advantages import AdvantageOutput, register_advantage_estimator
from lightrft.domain.policy_losses import PolicyLossParams, register_policy_loss


@register_advantage_estimator("mean_baseline")
def mean_baseline(inputs, params, all_reduce_sum):
    groups = inputs.group_index.long()
    rewards = inputs.rewards.double()
    sums = torch.zeros(int(groups.max()) + 1, dtype=torch.float64).index_add_(0, groups, rewards)
    counts = torch.bincount(groups).double()
    score = rewards - (sums / counts)[groups]
    mask = inputs.response_mask.bool()
    advantages = torch.where(mask, score[:, None].float(), 0.0)
    return AdvantageOutput(advantages, advantages, {})


@register_policy_loss("plain_pg", defaults=PolicyLossParams(agg="seq-mean-token-mean"))
def plain_pg(inputs, params):
    return -inputs.advantages * inputs.logprobs, {}
'''


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The plugin module, importable from ``tmp_path``; its registrations are undone after."""
    (tmp_path / f"{PLUGIN}.py").write_text(textwrap.dedent(PLUGIN_SOURCE))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield PLUGIN
    for registry, name in ((ADVANTAGE_ESTIMATORS, ESTIMATOR), (POLICY_LOSSES, LOSS)):
        if name in registry:
            registry.remove(name)
    sys.modules.pop(PLUGIN, None)


def test_names_are_unknown_before_the_plugin_is_imported() -> None:
    assert ESTIMATOR not in ADVANTAGE_ESTIMATORS
    with pytest.raises(ConfigError) as info:
        load_config(overrides=[f"algorithm.advantage_estimator={ESTIMATOR}"])
    assert "algorithm.advantage_estimator: Input should be 'grpo'" in str(info.value)
    assert f"(got {ESTIMATOR!r})" in str(info.value)


def test_a_plugin_estimator_and_loss_validate_translate_and_compute(plugin: str) -> None:
    config = load_config(
        overrides={
            "plugins": [plugin],
            "algorithm.advantage_estimator": ESTIMATOR,
            "algorithm.policy_loss": LOSS,
        }
    )
    settings = config.to_domain()
    assert settings.algorithm.advantage_estimator == ESTIMATOR
    assert settings.algorithm.estimator.name == ESTIMATOR
    assert settings.algorithm.estimator.uses_groups  # the decorator's default flags
    # no algorithm.agg set: the loss's registered defaults
    assert settings.algorithm.resolved_loss.agg == "seq-mean-token-mean"

    # groups {0, 1}: rewards (1, 0) -> mean 0.5; (3, 0, 0) -> mean 1
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 1, 0], [1, 0, 0]])
    inputs = AdvantageInputs(
        rewards=torch.tensor([1.0, 0.0, 3.0, 0.0, 0.0]),
        response_mask=mask,
        group_index=torch.tensor([0, 0, 1, 1, 1]),
    )
    out = compute_advantages(settings.algorithm.advantage_estimator, inputs)
    expected = torch.tensor(
        [
            [0.5, 0.5, 0.0],
            [-0.5, 0.0, 0.0],
            [2.0, 2.0, 2.0],
            [-1.0, -1.0, 0.0],
            [-1.0, 0.0, 0.0],
        ]
    )
    torch.testing.assert_close(out.advantages, expected)

    # the loss: seq-mean-token-mean of -A * log p over the two rows
    logprobs = torch.tensor([[-1.0, -2.0], [-0.5, -4.0]])
    loss_mask = torch.tensor([[1, 1], [1, 0]])
    loss = compute_policy_loss(
        settings.algorithm.policy_loss,
        PolicyLossInputs(
            logprobs=logprobs,
            old_logprobs=logprobs,
            advantages=torch.tensor([[1.0, 1.0], [-2.0, -2.0]]),
            response_mask=loss_mask,
        ),
        settings.algorithm.resolved_loss,
        LossNormalizer.from_mask(loss_mask),
    )
    # row 0: mean(1, 2) = 1.5; row 1: -(-2 * -0.5) = -1 -> (1.5 - 1) / 2
    torch.testing.assert_close(loss.loss, torch.tensor(0.25))


def test_an_unknown_name_lists_the_registered_ones(plugin: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(overrides={"plugins": [plugin], "algorithm.advantage_estimator": "nope"})
    message = str(info.value)
    assert "algorithm.advantage_estimator: Input should be 'grpo', 'group_norm'" in message
    assert f"or '{ESTIMATOR}' (got 'nope')" in message  # the plugin's name, registered last
    for name in ADVANTAGE_ESTIMATORS.choices():
        assert repr(name) in message


def test_the_schema_shows_the_registered_choices(plugin: str) -> None:
    load_config(overrides={"plugins": [plugin]})
    schema = AlgorithmConfig.model_json_schema()["properties"]
    assert schema["advantage_estimator"]["enum"] == list(ADVANTAGE_ESTIMATORS.in_order())
    assert schema["advantage_estimator"]["enum"][-1] == ESTIMATOR
    assert schema["policy_loss"]["enum"][0] == "ppo"
    assert LOSS in schema["policy_loss"]["enum"]


def test_a_plugin_cannot_take_a_registered_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "grpo_again_plugin.py").write_text(
        "from lightrft.domain.advantages import register_advantage_estimator\n"
        "register_advantage_estimator('grpo')(lambda inputs, params, reduce: None)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(ConfigError, match="advantage estimator 'grpo' is already registered"):
            load_config(overrides={"plugins": ["grpo_again_plugin"]})
    finally:
        sys.modules.pop("grpo_again_plugin", None)
