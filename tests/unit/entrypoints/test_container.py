"""The container's engine wiring: sharing the policy's weights, and the phase plan it needs."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import structlog
import torch

from lightrft.application.phases import DEFAULT_PLAN, engine_on_policy_plan
from lightrft.entrypoints.api import build_container
from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.config.loading import ConfigError
from tests.unit.adapters.hf.hf_tiny import tiny_model

TOY_REWARD = "tests.helpers.toy_rewards:text_checksum"  # varies with the text: gradients


@pytest.fixture(autouse=True)
def _quiet() -> None:
    torch.set_num_threads(1)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


def config(tiny_dir: Path, run_dir: Path, **overrides: Any) -> Any:
    base = {
        "model.path": str(tiny_dir),
        "data.train.num_builtin": 16,
        "data.eval": None,
        "rollout.prompts_per_step": 2,
        "rollout.n_samples_per_prompt": 2,
        "rollout.max_new_tokens": 4,
        "train.total_steps": 2,
        "optim.lr": 1e-2,
        "logging.run_dir": str(run_dir),
        "logging.progress": False,
        "eval.every": None,
        "checkpoint.every": None,
    }
    return load_config(algorithm="grpo", overrides={**base, **overrides})


def test_auto_shares_the_policy_module_and_keeps_the_policy_awake_with_the_engine(
    tiny_dir: Path, tmp_path: Path
) -> None:
    container = build_container(config(tiny_dir, tmp_path))
    engine, policy, cycle = container.engine(), container.policy(), container.cycle()
    assert engine.shares_policy_weights and engine.module is policy.module
    assert cycle.phases.plan == engine_on_policy_plan(DEFAULT_PLAN)
    assert "policy" in cycle.phases.plan["rollout"] and "policy" in cycle.phases.plan["eval"]
    cycle.train_step()
    assert engine.weight_loads == 1


def test_lora_or_off_gives_the_engine_its_own_model(tiny_dir: Path, tmp_path: Path) -> None:
    for overrides in ({"model.lora.rank": 2}, {"rollout.engine.share_policy_weights": "off"}):
        container = build_container(config(tiny_dir, tmp_path, **overrides))
        engine, policy = container.engine(), container.policy()
        assert not engine.shares_policy_weights
        assert {p.data_ptr() for p in engine.module.parameters()}.isdisjoint(
            p.data_ptr() for p in policy.module.parameters()
        )
        assert container.cycle().phases.plan == DEFAULT_PLAN


def test_on_without_a_single_plain_policy_is_a_config_error(tiny_dir: Path, tmp_path: Path) -> None:
    for overrides in (
        {"backend.strategy": "fsdp2"},
        {"model.lora.rank": 2},
    ):
        with pytest.raises(ConfigError, match="rollout.engine.share_policy_weights"):
            config(tiny_dir, tmp_path, **{"rollout.engine.share_policy_weights": "on", **overrides})


def test_sharing_does_not_change_training(tiny_dir: Path, tmp_path: Path) -> None:
    finals = []
    for choice in ("on", "off"):
        overrides = {
            "rollout.engine.share_policy_weights": choice,
            "reward.sources": [{"type": "python", "function": TOY_REWARD}],
        }
        container = build_container(config(tiny_dir, tmp_path / choice, **overrides))
        cycle = container.cycle()
        rewards = [cycle.train_step()["reward/mean"] for _ in range(2)]
        finals.append((rewards, dict(container.policy().module.state_dict())))
    (rewards_on, on), (rewards_off, off) = finals
    assert rewards_on == rewards_off
    moved = max(float((on[k] - tiny_model().state_dict()[k]).abs().max()) for k in on)
    assert moved > 1e-4  # training did change the weights
    for key in on:
        torch.testing.assert_close(on[key], off[key], atol=1e-6, rtol=1e-5)


def test_compile_decode_reaches_the_engine(tiny_dir: Path, tmp_path: Path) -> None:
    for choice in (True, False):
        container = build_container(
            config(tiny_dir, tmp_path, **{"rollout.engine.compile_decode": choice})
        )
        assert (container.engine()._decoder() is container.engine().module) is not choice


def test_packed_linears_reach_the_engine(tiny_dir: Path, tmp_path: Path) -> None:
    for choice in (True, False):
        container = build_container(
            config(
                tiny_dir,
                tmp_path,
                **{"rollout.engine.packed_linears": choice, "rollout.engine.fused_decode": "off"},
            )
        )
        assert (container.engine()._packed is not None) is choice


def test_fused_decode_reaches_the_engine(tiny_dir: Path, tmp_path: Path) -> None:
    for choice, fused in ((True, True), (False, False), ("auto", True), ("off", False)):
        container = build_container(
            config(tiny_dir, tmp_path, **{"rollout.engine.fused_decode": choice})
        )
        assert (container.engine()._fused is not None) is fused, choice


def test_the_default_engine_on_cpu_decodes_with_fused_steps(tiny_dir: Path, tmp_path: Path) -> None:
    """Unset, ``fused_decode`` is auto: the tiny fp32 Llama on CPU gets the fused steps."""
    engine = build_container(config(tiny_dir, tmp_path)).engine()
    assert engine._fused is not None and engine._packed is None


def test_auto_engine_on_cpu_is_the_default_hf_engine(tiny_dir: Path, tmp_path: Path) -> None:
    container = build_container(config(tiny_dir, tmp_path, **{"rollout.engine": "auto"}))
    engine = container.engine()
    assert type(engine).__name__ == "HfRolloutEngine"
    assert engine._fused is not None and engine._packed is None
