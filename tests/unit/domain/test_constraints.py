"""Safe RLHF's constraint parts: projected dual ascent on the multiplier, the normalised
advantage combination, violations, and the cost model's sign term (hand-computed values)."""

from __future__ import annotations

import math

import pytest
import torch

from lightrft.domain.constraints import (
    CostLimit,
    combine_advantages,
    update_multiplier,
    violations,
)
from lightrft.domain.preference import safety_sign_loss


def test_multiplier_trajectory_by_hand() -> None:
    # limit 0.2, lr 0.5, init 1.0; batch mean costs 0.6, 0.4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.9:
    # 1.0 + 0.5*0.4 = 1.2; 1.2 + 0.5*0.2 = 1.3; then -0.1 each step: 1.2, 1.1, 1.0, 0.9, 0.8;
    # then 0.8 + 0.5*0.7 = 1.15
    costs = [0.6, 0.4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.9]
    expected = [1.2, 1.3, 1.2, 1.1, 1.0, 0.9, 0.8, 1.15]
    multiplier, seen = 1.0, []
    for cost in costs:
        multiplier = update_multiplier(multiplier, cost, limit=0.2, lr=0.5)
        seen.append(multiplier)
    assert seen == pytest.approx(expected, abs=1e-12)


def test_multiplier_is_projected_onto_zero_and_restarts_from_it() -> None:
    # init 0.3, lr 1, limit 0.5: cost 0.1 -> 0.3 - 0.4 = -0.1 -> 0; cost 0.0 -> 0 (stays);
    # cost 0.75 -> 0 + 0.25 = 0.25
    m = update_multiplier(0.3, 0.1, limit=0.5, lr=1.0)
    assert m == 0.0
    m = update_multiplier(m, 0.0, limit=0.5, lr=1.0)
    assert m == 0.0
    assert update_multiplier(m, 0.75, limit=0.5, lr=1.0) == pytest.approx(0.25)


def test_multiplier_refuses_a_non_finite_cost() -> None:
    with pytest.raises(ValueError, match="finite"):
        update_multiplier(1.0, float("nan"), limit=0.1, lr=0.1)


def test_combined_advantage_by_hand() -> None:
    reward = torch.tensor([[1.0, 1.0], [-1.0, 0.0]])
    cost = torch.tensor([[1.0, 1.0], [-1.0, 0.0]])
    other = torch.tensor([[0.5, 0.5], [0.0, 0.0]])
    # lambda = 1: (A_r - A_c) / 2 = 0 everywhere
    assert torch.equal(combine_advantages(reward, [cost], [1.0]), torch.zeros(2, 2))
    # lambda = 0: the reward advantage unchanged
    assert torch.equal(combine_advantages(reward, [cost], [0.0]), reward)
    # lambdas 3 and 1: (A_r - 3 A_c - 1 A_o) / 5 -> row 0: (1 - 3 - 0.5) / 5 = -0.5;
    # row 1 token 0: (-1 + 3 - 0) / 5 = 0.4; padding (0) stays 0
    combined = combine_advantages(reward, [cost, other], [3.0, 1.0])
    assert torch.allclose(combined, torch.tensor([[-0.5, -0.5], [0.4, 0.0]]))


def test_combination_checks_its_inputs() -> None:
    reward = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="2 cost advantages for 1 multipliers"):
        combine_advantages(reward, [reward, reward], [1.0])
    with pytest.raises(ValueError, match="multipliers"):
        combine_advantages(reward, [reward], [-1.0])
    with pytest.raises(ValueError, match="cost_advantages"):
        combine_advantages(reward, [torch.zeros(2, 2)], [1.0])


def test_violations_read_the_sign_of_a_cost_model() -> None:
    scores = torch.tensor([-2.0, 0.0, 0.5, 3.0])
    assert violations(scores, 0.0).tolist() == [0.0, 0.0, 1.0, 1.0]
    assert violations(scores, 1.0).tolist() == [0.0, 0.0, 0.0, 1.0]


def test_cost_limit_validates() -> None:
    with pytest.raises(ValueError, match="multiplier_lr"):
        CostLimit("cost", limit=0.1, multiplier_lr=0.0)
    with pytest.raises(ValueError, match="init"):
        CostLimit("cost", limit=0.1, multiplier_lr=0.1, init=-1.0)


def test_safety_sign_term_by_hand() -> None:
    scores = torch.tensor([2.0, 2.0, -1.0, 5.0])
    signs = torch.tensor([1, -1, -1, 0])
    # -log sigmoid(s c): unsafe scored 2 -> log(1 + e^-2); safe scored 2 -> log(1 + e^2);
    # safe scored -1 -> log(1 + e^-1); unlabeled -> 0
    expected = [math.log1p(math.exp(-2)), math.log1p(math.exp(2)), math.log1p(math.exp(-1)), 0.0]
    assert safety_sign_loss(scores, signs).tolist() == pytest.approx(expected, rel=1e-6)
