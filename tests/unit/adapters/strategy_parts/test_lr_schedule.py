"""The shared learning-rate schedule, against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from lightrft.adapters.strategy_parts.lr_schedule import learning_rate, lr_multiplier
from lightrft.domain.types import OptimizerParams


def test_warmup_ramps_linearly_from_the_first_step() -> None:
    optim = OptimizerParams(lr=0.1, warmup_steps=4)
    # (s + 1) / 4 for s < 4, then constant 1
    assert [lr_multiplier(s, optim) for s in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    assert learning_rate(0, optim) == pytest.approx(0.025)


def test_cosine_decays_to_the_floor() -> None:
    optim = OptimizerParams(
        lr=1.0, warmup_steps=2, total_steps=6, schedule="cosine", min_lr_ratio=0.2
    )
    # progress (s - 2) / 4; f = 0.2 + 0.8 (1 + cos(pi p)) / 2
    expected = [
        0.5,
        1.0,
        1.0,
        0.2 + 0.4 * (1 + math.cos(math.pi / 4)),
        0.6,
        0.2 + 0.4 * (1 + math.cos(3 * math.pi / 4)),
        0.2,
        0.2,
    ]
    assert [lr_multiplier(s, optim) for s in range(8)] == pytest.approx(expected)


def test_linear_decays_to_the_floor_and_stays() -> None:
    optim = OptimizerParams(lr=1.0, total_steps=4, schedule="linear", min_lr_ratio=0.0)
    # 1 - s / 4, clipped at 0 after total_steps
    assert [lr_multiplier(s, optim) for s in range(6)] == pytest.approx(
        [1.0, 0.75, 0.5, 0.25, 0.0, 0.0]
    )


def test_a_negative_step_is_refused() -> None:
    with pytest.raises(ValueError, match="step"):
        lr_multiplier(-1, OptimizerParams())
