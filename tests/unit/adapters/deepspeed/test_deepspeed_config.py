"""The DeepSpeed config builder and the strategy's checks before DeepSpeed is imported.

None of these tests needs DeepSpeed installed.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch import nn

from lightrft.adapters.deepspeed import DeepSpeedStrategy, build_deepspeed_config, merge_configs
from lightrft.adapters.deepspeed.config import OWNED_KEYS
from lightrft.domain.ports import Strategy
from lightrft.domain.types import OptimizerParams

OPTIM = OptimizerParams(lr=1e-3, max_grad_norm=0.7)


def build(**overrides: object) -> dict:
    kwargs: dict = {"zero_stage": 2, "bf16": False, "cpu_offload": False, "world_size": 4}
    kwargs.update(overrides)
    return build_deepspeed_config(OPTIM, **kwargs)


def test_deepspeed_neither_rescales_the_loss_nor_owns_the_accumulation_boundary() -> None:
    config = build(world_size=4)
    assert config["gradient_accumulation_steps"] == 1  # engine.backward divides by this
    assert config["managed_gradient_accumulation"] is False  # every step() is a boundary
    assert config["train_micro_batch_size_per_gpu"] == 1
    assert config["train_batch_size"] == 1 * 1 * 4  # micro x accumulation x world size
    assert config["fp16"] == {"enabled": False}


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_zero_clips_to_max_grad_norm(stage: int) -> None:
    config = build(zero_stage=stage)
    assert config["gradient_clipping"] == 0.7
    assert config["zero_optimization"] == {"stage": stage}


def test_stage0_leaves_clipping_to_the_strategy_and_no_max_norm_means_no_clipping() -> None:
    assert build(zero_stage=0)["gradient_clipping"] == 0.0
    unclipped = OptimizerParams(lr=1e-3, max_grad_norm=None)
    config = build_deepspeed_config(
        unclipped, zero_stage=2, bf16=False, cpu_offload=False, world_size=1
    )
    assert config["gradient_clipping"] == 0.0


def test_cpu_offload_moves_the_optimizer_to_host_memory() -> None:
    config = build(zero_stage=3, cpu_offload=True, pin_memory=True)
    assert config["zero_optimization"]["offload_optimizer"] == {"device": "cpu", "pin_memory": True}
    assert "offload_optimizer" not in build(zero_stage=3)["zero_optimization"]


def test_bf16_skips_non_finite_gradients() -> None:
    assert build(bf16=True)["bf16"] == {"enabled": True, "check_grad_overflow": True}
    assert build()["bf16"]["enabled"] is False


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"zero_stage": 4}, "zero_stage must be one of"),
        ({"world_size": 0}, "world_size must be >= 1"),
        ({"zero_stage": 0, "bf16": True}, "need zero_stage >= 1"),
        ({"zero_stage": 0, "cpu_offload": True}, "need zero_stage >= 1"),
    ],
)
def test_invalid_settings_are_refused(overrides: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build(**overrides)


def test_extra_config_merges_into_nested_sections() -> None:
    extra = {"zero_optimization": {"stage3_param_persistence_threshold": 0}, "zero_x": 1}
    config = build(zero_stage=3, cpu_offload=True, extra=extra)
    assert config["zero_optimization"] == {
        "stage": 3,
        "offload_optimizer": {"device": "cpu", "pin_memory": False},
        "stage3_param_persistence_threshold": 0,
    }
    assert config["zero_x"] == 1
    assert extra == {"zero_optimization": {"stage3_param_persistence_threshold": 0}, "zero_x": 1}


@pytest.mark.parametrize("key", OWNED_KEYS)
def test_extra_config_may_not_touch_what_exactness_depends_on(key: str) -> None:
    with pytest.raises(ValueError, match="DeepSpeedStrategy owns them"):
        build(extra={key: 2})


def test_merge_configs_replaces_leaves_and_copies() -> None:
    base = {"a": {"b": 1, "c": [1]}, "d": 2}
    merged = merge_configs(base, {"a": {"b": 5}, "d": {"e": 3}})
    assert merged == {"a": {"b": 5, "c": [1]}, "d": {"e": 3}}
    merged["a"]["c"].append(2)
    assert base == {"a": {"b": 1, "c": [1]}, "d": 2}


def test_strategy_checks_its_arguments_and_the_process_group_before_importing_deepspeed() -> None:
    with pytest.raises(ValueError, match="need zero_stage >= 1"):
        DeepSpeedStrategy(OPTIM, device=torch.device("cpu"), zero_stage=0, bf16=True)
    with pytest.raises(ValueError, match="owns them"):
        DeepSpeedStrategy(OPTIM, device=torch.device("cpu"), extra_config={"optimizer": {}})
    strategy = DeepSpeedStrategy(OPTIM, device=torch.device("cpu"), zero_stage=3)
    with pytest.raises(RuntimeError, match="call prepare"):
        _ = strategy.module
    if not torch.distributed.is_initialized():
        with pytest.raises(RuntimeError, match="torch.distributed initialized"):
            strategy.prepare(nn.Linear(2, 2))


def test_the_package_imports_without_deepspeed() -> None:
    code = (
        "import sys\n"
        "sys.modules['deepspeed'] = None\n"  # any `import deepspeed` now raises ImportError
        "import torch\n"
        "from lightrft.adapters.deepspeed import DeepSpeedStrategy, build_deepspeed_config\n"
        "from lightrft.domain.types import OptimizerParams\n"
        "build_deepspeed_config(OptimizerParams(), zero_stage=1, bf16=False, cpu_offload=False,"
        " world_size=2)\n"
        "DeepSpeedStrategy(OptimizerParams(), device=torch.device('cpu'))\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_the_strategy_implements_the_port() -> None:
    strategy = DeepSpeedStrategy(OPTIM, device=torch.device("cpu"))
    assert isinstance(strategy, Strategy)
    assert strategy.current_lr == OPTIM.lr and not strategy.is_offloaded


def test_lr_scale_multiplies_the_scheduled_rate() -> None:
    strategy = DeepSpeedStrategy(OPTIM, device=torch.device("cpu"))
    strategy.set_lr_scale(0.25)
    assert strategy.current_lr == pytest.approx(0.25 * OPTIM.lr)
    with pytest.raises(ValueError, match="lr scale"):
        strategy.set_lr_scale(float("nan"))
