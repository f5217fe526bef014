"""One AdamW recipe for every strategy: weight decay on matrices, none on 1-D tensors."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from lightrft.adapters.deepspeed.optimizer import build_client_optimizer
from lightrft.adapters.single_device import SingleDeviceStrategy
from lightrft.adapters.strategy_parts.adamw import adamw_param_groups, build_adamw
from lightrft.domain.types import OptimizerParams

OPTIM = OptimizerParams(lr=0.1, weight_decay=0.5, betas=(0.8, 0.9), eps=1e-6)


def _model() -> nn.Module:
    return nn.Sequential(nn.Linear(3, 2), nn.LayerNorm(2))  # weight (2,3); bias, ln (2,)


def _decays(optimizer: torch.optim.Optimizer) -> list[tuple[float, list[tuple[int, ...]]]]:
    return [
        (g["weight_decay"], [tuple(p.shape) for p in g["params"]]) for g in optimizer.param_groups
    ]


EXPECTED = [(0.5, [(2, 3)]), (0.0, [(2,), (2,), (2,)])]


def test_groups_split_matrices_from_vectors() -> None:
    groups = adamw_param_groups(list(_model().parameters()), 0.5)
    shapes = [(g["weight_decay"], [tuple(p.shape) for p in g["params"]]) for g in groups]
    assert shapes == EXPECTED


def test_empty_groups_are_dropped_and_no_parameter_is_an_error() -> None:
    only_bias = [nn.Parameter(torch.zeros(3))]
    assert adamw_param_groups(only_bias, 0.1) == [{"params": only_bias, "weight_decay": 0.0}]
    with pytest.raises(ValueError, match="requires_grad"):
        adamw_param_groups([], 0.1)


def test_build_adamw_uses_the_settings() -> None:
    optimizer = build_adamw(list(_model().parameters()), OPTIM)
    assert isinstance(optimizer, torch.optim.AdamW)
    assert _decays(optimizer) == EXPECTED
    group = optimizer.param_groups[0]
    assert (group["lr"], group["betas"], group["eps"]) == (0.1, (0.8, 0.9), 1e-6)


def test_single_device_and_deepspeed_build_the_same_groups() -> None:
    strategy = SingleDeviceStrategy(torch.device("cpu"), OPTIM)
    strategy.prepare(_model())
    assert _decays(strategy.optimizer) == EXPECTED
    client = build_client_optimizer(list(_model().parameters()), OPTIM, cpu_offload=False)
    assert _decays(client) == EXPECTED
