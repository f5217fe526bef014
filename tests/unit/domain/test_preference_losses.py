"""The scalar reward model's pairwise losses against hand computations with math.exp/log."""

from __future__ import annotations

import math

import pytest
import torch

from lightrft.domain.preference_losses import (
    PAIR_LOSSES,
    hps_loss,
    log_exp_loss,
    log_sigmoid_loss,
    tie_loss,
)

CHOSEN = [1.5, -0.25, 0.0, 3.0]
REJECTED = [0.5, 0.75, 0.0, -2.0]


def _t(values: list[float]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def test_sigmoid_is_minus_log_sigmoid_of_the_gap_minus_margin() -> None:
    margin = [0.1, 0.0, 0.5, 1.0]
    expected = [
        -math.log(1 / (1 + math.exp(-(c - r - m))))
        for c, r, m in zip(CHOSEN, REJECTED, margin, strict=True)
    ]
    got = log_sigmoid_loss(_t(CHOSEN), _t(REJECTED), _t(margin))
    assert got.tolist() == pytest.approx(expected, rel=1e-12)
    # a float margin applies to every pair: -log sigmoid(1.5 - 0.5 - 0.1) = log(1 + e^-0.9)
    assert float(log_sigmoid_loss(_t([1.5]), _t([0.5]), 0.1)[0]) == pytest.approx(
        math.log(1 + math.exp(-0.9))
    )


def test_logexp_is_log_one_plus_exp_and_ignores_the_margin() -> None:
    expected = [math.log(1 + math.exp(r - c)) for c, r in zip(CHOSEN, REJECTED, strict=True)]
    got = log_exp_loss(_t(CHOSEN), _t(REJECTED), 0.7)
    assert got.tolist() == pytest.approx(expected, rel=1e-12)
    # stable where the naive form overflows: log(1 + e^800) = 800
    assert float(log_exp_loss(_t([-400.0]), _t([400.0]))[0]) == pytest.approx(800.0)


def test_hps_is_the_cross_entropy_of_the_two_way_choice() -> None:
    expected = [
        -math.log(math.exp(c) / (math.exp(c) + math.exp(r)))
        for c, r in zip(CHOSEN, REJECTED, strict=True)
    ]
    got = hps_loss(_t(CHOSEN), _t(REJECTED), 5.0)  # the margin does not apply
    assert got.tolist() == pytest.approx(expected, rel=1e-12)
    # equal scores: a coin flip, log 2
    assert float(hps_loss(_t([0.3]), _t([0.3]))[0]) == pytest.approx(math.log(2))


def test_the_three_agree_without_a_margin() -> None:
    c, r = _t(CHOSEN), _t(REJECTED)
    assert torch.allclose(log_sigmoid_loss(c, r), log_exp_loss(c, r))
    assert torch.allclose(log_sigmoid_loss(c, r), hps_loss(c, r))


def test_tie_loss_is_the_absolute_gap() -> None:
    assert tie_loss(_t([0.25, -1.0]), _t([1.0, -0.5])).tolist() == [0.75, 0.5]


def test_registry_names_the_original_loss_types_and_which_read_the_margin() -> None:
    assert PAIR_LOSSES.names() == ("hps", "logexp", "sigmoid")
    assert [PAIR_LOSSES.get(n).uses_margin for n in ("sigmoid", "logexp", "hps")] == [
        True,
        False,
        False,
    ]
    with pytest.raises(ValueError, match="unknown reward-model loss 'bce'"):
        PAIR_LOSSES.get("bce")


def test_shapes_are_checked() -> None:
    with pytest.raises(ValueError):
        hps_loss(_t([1.0, 2.0]), _t([1.0]))
