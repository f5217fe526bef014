"""``optim.critic_lr``: the critic's optimizer takes its own peak learning rate (the original's
``--critic_learning_rate``), the policy keeps ``optim.lr``; unset, both use ``optim.lr``."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import structlog
import torch

from lightrft.entrypoints.api import build_container
from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.config.loading import ConfigError


@pytest.fixture(autouse=True)
def _quiet() -> None:
    torch.set_num_threads(1)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


def ppo(tiny_dir: Path, run_dir: Path, *extra: str) -> Any:
    return load_config(
        algorithm="ppo",
        overrides=[
            f"model.path={tiny_dir}",
            "data.train.num_builtin=8",
            "data.eval=null",
            "rollout.prompts_per_step=2",
            "rollout.max_new_tokens=4",
            "train.total_steps=1",
            f"logging.run_dir={run_dir}",
            "logging.progress=false",
            "checkpoint.every=null",
            "optim.lr=3e-4",
            *extra,
        ],
    )


def optimizer_lrs(strategy: Any) -> set[float]:
    return {group["lr"] for group in strategy.optimizer.param_groups}


def test_the_critic_strategy_takes_critic_lr_and_the_policy_keeps_lr(
    tiny_dir: Path, tmp_path: Path
) -> None:
    config = ppo(tiny_dir, tmp_path, "optim.critic_lr=9e-3")
    container = build_container(config)
    policy, critic = container.policy_strategy(), container.critic_strategy()
    assert critic is not None and policy is not critic
    assert optimizer_lrs(policy) == {3e-4}  # constant schedule: the peak from step 0
    assert optimizer_lrs(critic) == {9e-3}


def test_without_critic_lr_the_critic_takes_lr(tiny_dir: Path, tmp_path: Path) -> None:
    container = build_container(ppo(tiny_dir, tmp_path))
    critic = container.critic_strategy()
    assert critic is not None and optimizer_lrs(critic) == {3e-4}


def test_the_schedule_is_shared_the_peak_is_the_roles() -> None:
    config = load_config(
        algorithm="ppo",
        overrides=[
            "optim.lr=1e-6",
            "optim.critic_lr=9e-6",
            "optim.schedule=cosine",
            "optim.warmup_ratio=0.5",
            "train.total_steps=4",
        ],
    )
    policy, critic = config.optimizer_params(), config.optimizer_params("critic")
    assert (policy.lr, critic.lr) == (1e-6, 9e-6)
    assert policy.warmup_steps == critic.warmup_steps == 2  # ceil(0.5 x 4 steps)
    assert policy.schedule == critic.schedule == "cosine"


def test_the_originals_flag_sets_it_and_a_bad_value_is_named() -> None:
    config = load_config(algorithm="ppo", overrides=["--critic_learning_rate", "9e-6"])
    assert config.optim.critic_lr == 9e-6 and config.optim.lr == 1e-6
    with pytest.raises(ConfigError, match="optim.critic_lr"):
        load_config(algorithm="ppo", overrides=["optim.critic_lr=0"])
