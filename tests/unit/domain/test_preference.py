"""Bradley-Terry loss, preference accuracy and last-token pooling, against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from lightrft.domain.preference import bradley_terry_loss, last_token_index, preference_accuracy


def test_bradley_terry_hand_computed() -> None:
    chosen = torch.tensor([2.0, 0.0, -1.0])
    rejected = torch.tensor([1.0, 0.0, 3.0])
    loss = bradley_terry_loss(chosen, rejected)
    # -log sigmoid(d) = log(1 + e^-d): d = 1 -> log(1 + e^-1) = 0.313262;
    # d = 0 -> log 2 = 0.693147; d = -4 -> log(1 + e^4) = 4.018150
    expected = torch.tensor([0.313262, 0.693147, 4.018150])
    torch.testing.assert_close(loss, expected, atol=1e-6, rtol=0)


def test_bradley_terry_margin() -> None:
    chosen, rejected = torch.tensor([2.0, 2.0]), torch.tensor([1.0, 1.0])
    # d = 2 - 1 - 0.5 = 0.5 -> log(1 + e^-0.5) = 0.474077; d = 1 - 2 = -1 -> log(1 + e) = 1.313262
    loss = bradley_terry_loss(chosen, rejected, torch.tensor([0.5, 2.0]))
    torch.testing.assert_close(loss, torch.tensor([0.474077, 1.313262]), atol=1e-6, rtol=0)
    scalar = bradley_terry_loss(chosen, rejected, 0.5)
    assert math.isclose(float(scalar[0]), 0.474077, abs_tol=1e-6)


def test_bradley_terry_gradient_and_stability() -> None:
    chosen = torch.tensor([0.0], requires_grad=True)
    rejected = torch.tensor([0.0], requires_grad=True)
    bradley_terry_loss(chosen, rejected).sum().backward()
    # d/dc log(1 + e^-(c - r)) = -sigmoid(-(c - r)) = -0.5 at c = r
    assert float(chosen.grad) == pytest.approx(-0.5)
    assert float(rejected.grad) == pytest.approx(0.5)
    big = bradley_terry_loss(torch.tensor([-1000.0]), torch.tensor([1000.0]))
    assert float(big) == pytest.approx(2000.0)  # softplus(2000) = 2000, no overflow


def test_bradley_terry_shape_errors() -> None:
    with pytest.raises(ValueError, match="rejected"):
        bradley_terry_loss(torch.zeros(3), torch.zeros(2))
    with pytest.raises(ValueError, match="margin"):
        bradley_terry_loss(torch.zeros(3), torch.zeros(3), torch.zeros(2))


def test_preference_accuracy() -> None:
    # pairs: win, tie (wrong), loss, win -> 2 / 4
    acc = preference_accuracy(
        torch.tensor([1.0, 0.0, -1.0, 5.0]), torch.tensor([0.0, 0.0, 0.0, 4.0])
    )
    assert acc == 0.5
    with pytest.raises(ValueError):
        preference_accuracy(torch.zeros(0), torch.zeros(0))


def test_last_token_index_left_and_right_padding() -> None:
    mask = torch.tensor([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [0, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert last_token_index(mask).tolist() == [2, 4, 2, 4]
    with pytest.raises(ValueError, match="no attended token"):
        last_token_index(torch.tensor([[1, 0], [0, 0]]))


def test_gate_rewards_hand_computed() -> None:
    from lightrft.domain.rewards import gate_rewards

    total = torch.tensor([0.7, 0.2, 0.9, 0.4])
    fmt = torch.tensor([1.0, 0.0, 1.0, 1.0])
    safety = torch.tensor([0.9, 0.9, 0.1, 0.6])
    # sample 1 fails the format gate (0 < 1), sample 2 the safety gate (0.1 < 0.5)
    rewards, passed = gate_rewards(
        total, {"fmt": fmt, "safety": safety}, {"fmt": 1.0, "safety": 0.5}, -1.0
    )
    assert passed.tolist() == [True, False, False, True]
    torch.testing.assert_close(rewards, torch.tensor([0.7, -1.0, -1.0, 0.4]))
    with pytest.raises(ValueError, match="names no reward source"):
        gate_rewards(total, {"fmt": fmt}, {"other": 1.0}, 0.0)
