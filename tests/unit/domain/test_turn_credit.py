"""Turn-level credit: turn rewards on turn ends, and the estimators that read them, against
hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from lightrft.application.params import AlgorithmParams
from lightrft.domain.advantages import (
    ADVANTAGE_ESTIMATORS,
    AdvantageInputs,
    AdvantageParams,
    compute_advantages,
)
from lightrft.domain.trajectory import Episode, Segment
from lightrft.domain.turn_credit import turn_token_rewards


def _episode(turn_rewards: tuple[float, ...]) -> Episode:
    """Turn 1: response positions 0-1, an observation at 2, turn 2: positions 3-4."""
    return Episode(
        (
            Segment((11, 12), "call", True),
            Segment((90,), "obs", False),
            Segment((13, 14), "answer", True),
        ),
        turn_rewards,
        "done",
    )


MASK = torch.tensor([[1, 1, 0, 1, 1], [1, 1, 0, 1, 1]])


def test_turn_rewards_sit_on_turn_ends_and_the_rest_on_the_last_token() -> None:
    mask = torch.tensor([[1, 1, 0, 1, 1, 0], [1, 1, 1, 0, 0, 0]])
    rewards = torch.tensor([2.0, 3.0])  # row 0: shaped reward 2.0 = turns 0.5 + 1.0 + 0.5
    out = turn_token_rewards([_episode((0.5, 1.0)), None], rewards, mask)
    expected = torch.tensor([[0.0, 0.5, 0.0, 0.0, 1.5, 0.0], [0.0, 0.0, 3.0, 0.0, 0.0, 0.0]])
    assert torch.equal(out, expected)


def test_a_turn_end_outside_the_generated_tokens_is_an_error() -> None:
    mask = torch.tensor([[1, 0, 0, 1, 1]])  # position 1 (turn 1's end) not generated
    with pytest.raises(ValueError, match="row 0: turn end 1"):
        turn_token_rewards([_episode((0.0, 1.0))], torch.tensor([1.0]), mask)


def test_grpo_credits_each_turn_with_the_rewards_from_it_on() -> None:
    # episode A earns 1 for its first turn and 0 for its second; B earns nothing.
    # group: mean 0.5, Bessel std sqrt(0.5); A's first turn G = 1, its second G = 0.
    token_rewards = turn_token_rewards(
        [_episode((1.0, 0.0)), _episode((0.0, 0.0))], torch.tensor([1.0, 0.0]), MASK
    )
    inputs = AdvantageInputs(torch.tensor([1.0, 0.0]), MASK, torch.tensor([0, 0]))
    params = AdvantageParams(eps=0.0)
    credited = compute_advantages("grpo", _with(inputs, token_rewards), params).advantages
    s = 0.5 / math.sqrt(0.5)
    expected = torch.tensor([[s, s, 0.0, -s, -s], [-s, -s, 0.0, -s, -s]])
    assert torch.allclose(credited, expected)
    plain = compute_advantages("grpo", inputs, params).advantages  # the same on every turn
    assert torch.allclose(plain, torch.tensor([[s, s, 0, s, s], [-s, -s, 0, -s, -s]]))


def test_reinforce_pp_discounts_each_turn_reward_from_its_own_turn_end() -> None:
    # token rewards 1 at position 1 (turn 1's end), 2 at position 4; gamma 0.5, the
    # observation at 2 skipped: R_4 = 2, R_3 = 1, R_1 = 1 + 0.5 * 1 = 1.5, R_0 = 0.75
    mask = MASK[:1]
    token_rewards = torch.tensor([[0.0, 1.0, 0.0, 0.0, 2.0]])
    inputs = AdvantageInputs(
        torch.tensor([3.0]), mask, torch.tensor([0]), token_rewards=token_rewards
    )
    out = compute_advantages("reinforce_pp", inputs, AdvantageParams(gamma=0.5))
    assert torch.allclose(out.returns, torch.tensor([[0.75, 1.5, 0.0, 1.0, 2.0]]))


@pytest.mark.parametrize(
    "name", [n for n in ADVANTAGE_ESTIMATORS.names() if ADVANTAGE_ESTIMATORS.get(n).turn_credit]
)
def test_rewards_on_the_last_turn_only_give_the_plain_estimator(name: str) -> None:
    torch.manual_seed(0)
    mask = torch.tensor([[1, 1, 0, 1, 1], [1, 1, 1, 1, 0], [1, 0, 0, 1, 1], [1, 1, 1, 1, 1]])
    rewards = torch.tensor([1.0, 0.0, 0.5, 2.0])
    episodes = [_episode((0.0, 1.0)), None, None, None]
    token_rewards = turn_token_rewards(episodes, rewards, mask)
    inputs = AdvantageInputs(
        rewards, mask, torch.tensor([0, 0, 1, 1]), values=torch.randn(4, 5), kl=torch.zeros(4, 5)
    )
    plain = compute_advantages(name, inputs).advantages
    credited = compute_advantages(name, _with(inputs, token_rewards)).advantages
    assert torch.allclose(plain, credited, atol=1e-6)


def test_token_rewards_are_checked() -> None:
    inputs = AdvantageInputs(torch.tensor([1.0, 0.0]), MASK, torch.tensor([0, 0]))
    wrong_sum = torch.tensor([[0.0, 1.0, 0.0, 0.0, 1.0], [0.0] * 5])
    with pytest.raises(ValueError, match="token_rewards row 0 sums to 2.0"):
        compute_advantages("grpo", _with(inputs, wrong_sum))
    off_mask = torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.0], [0.0] * 5])
    with pytest.raises(ValueError, match="0 where response_mask is 0"):
        compute_advantages("grpo", _with(inputs, off_mask))
    fine = torch.tensor([[0.0, 0.0, 0.0, 0.0, 1.0], [0.0] * 5])
    remax = AdvantageInputs(
        inputs.rewards, MASK, inputs.group_index, baseline_rewards=torch.zeros(2)
    )
    with pytest.raises(ValueError, match="'remax' does not take token_rewards"):
        compute_advantages("remax", _with(remax, fine))
    with pytest.raises(ValueError, match="turn_credit needs"):
        AlgorithmParams(advantage_estimator="remax", turn_credit=True)


def _with(inputs: AdvantageInputs, token_rewards: torch.Tensor) -> AdvantageInputs:
    from dataclasses import replace

    return replace(inputs, token_rewards=token_rewards)
