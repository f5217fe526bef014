"""The token-budget settings reach the services' parameters."""

from __future__ import annotations

import pytest

from lightrft.entrypoints.config.loading import ConfigError, load_config


def test_token_budgets_translate() -> None:
    config = load_config(
        overrides=["rollout.max_tokens_per_forward=4096", "train.max_tokens_per_micro_batch=2048"]
    )
    settings = config.to_domain()
    assert settings.rollout.max_tokens_per_forward == 4096
    assert settings.train.max_tokens_per_micro_batch == 2048
    assert load_config().to_domain().rollout.max_tokens_per_forward is None


def test_a_non_positive_budget_names_the_key() -> None:
    with pytest.raises(ConfigError, match="max_tokens_per_forward"):
        load_config(overrides=["rollout.max_tokens_per_forward=0"])
