"""``alike_group_advantage``: a group whose samples all scored alike gets
c (r - m) / (s + eps) instead of 0, m and s the mean and population std over the samples of
all such groups; every other group keeps its estimator's own advantage (hand values,
invariants, the config's key)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor

from lightrft.domain.advantages import AdvantageInputs, AdvantageParams, compute_advantages
from lightrft.entrypoints.config.loading import load_config

FAMILY = ["grpo", "dr_grpo", "rloo", "opo", "cpgd"]


def t(*rows: float) -> Tensor:
    return torch.tensor(rows, dtype=torch.float64)


def first_token(name: str, rewards: Tensor, groups: list[int], c: float, **kw: object) -> Tensor:
    mask = torch.ones(len(groups), 3, dtype=torch.bool)
    inputs = AdvantageInputs(rewards, mask, torch.tensor(groups), **kw)  # type: ignore[arg-type]
    out = compute_advantages(name, inputs, AdvantageParams(alike_group_advantage=c))
    return out.advantages[:, 0]


def test_grpo_hand_values() -> None:
    # groups: [1, 1] all right, [0, 0] all wrong, [1, 0] mixed
    # the alike samples [1, 1, 0, 0]: mean 0.5, population std 0.5
    # alike: 0.5 * (1 - 0.5) / 0.5 = 0.5 and 0.5 * (0 - 0.5) / 0.5 = -0.5
    # mixed (GRPO): mean 0.5, Bessel std sqrt(0.5) -> +-0.5 / sqrt(0.5) = +-0.7071
    got = first_token("grpo", t(1, 1, 0, 0, 1, 0), [0, 0, 1, 1, 2, 2], 0.5)
    s = 0.5 * 0.5 / (0.5 + 1e-6)
    m = 0.5 / (math.sqrt(0.5) + 1e-6)
    torch.testing.assert_close(got, t(s, s, -s, -s, m, -m))


def test_the_pool_is_the_alike_samples_not_the_batch() -> None:
    # groups [0, 0], [1, 1], [1, 1] alike and [1, 0, 0, 0] mixed (dr_grpo)
    # pool [0, 0, 1, 1, 1, 1]: mean 2/3, variance (2 * 4/9 + 4 * 1/9) / 6 = 2/9, std sqrt(2)/3
    # c = 1: (0 - 2/3) / (sqrt(2)/3) = -sqrt(2); (1 - 2/3) / (sqrt(2)/3) = 1/sqrt(2)
    # (the batch's mean 5/10 would give other values)
    rewards = t(0, 0, 1, 1, 1, 1, 1, 0, 0, 0)
    got = first_token("dr_grpo", rewards, [0, 0, 1, 1, 2, 2, 3, 3, 3, 3], 1.0)
    std = math.sqrt(2) / 3 + 1e-6
    low, high = (0 - 2 / 3) / std, (1 - 2 / 3) / std
    torch.testing.assert_close(got[:6], t(low, low, high, high, high, high))
    # the mixed group is dr_grpo's r - mean_group: 1 - 1/4 and 0 - 1/4
    torch.testing.assert_close(got[6:], t(0.75, -0.25, -0.25, -0.25))


def test_all_wrong_alike_groups_without_an_all_right_one_get_zero() -> None:
    # only all-wrong groups scored alike: no all-right group to push against, no net push
    got = first_token("grpo", t(0, 0, 0, 0, 1, 0), [0, 0, 1, 1, 2, 2], 1.0)
    assert torch.equal(got[:4], torch.zeros(4, dtype=torch.float64))


@pytest.mark.parametrize("name", FAMILY)
def test_a_batch_of_equal_rewards_gets_exact_zero(name: str) -> None:
    # every sample of the batch wrong: nothing to push against
    got = first_token(name, t(0, 0, 0, 0), [0, 0, 1, 1], 1.0)
    assert torch.equal(got, torch.zeros(4, dtype=torch.float64))


def test_a_singleton_group_keeps_zero() -> None:
    with pytest.warns(UserWarning, match="single sample"):
        got = first_token("grpo", t(1, 0, 1), [0, 0, 1], 1.0)
    assert got[2] == 0


def test_token_rewards_get_the_alike_score_on_every_token() -> None:
    # turn credit: an alike group's every token holds its sample's alike score
    rewards = t(1, 1, 0, 0, 1, 0)
    token_rewards = torch.zeros(6, 3, dtype=torch.float64)
    token_rewards[:, 2] = rewards
    token_rewards[4] = torch.tensor([0.5, 0, 0.5])
    mask = torch.ones(6, 3, dtype=torch.bool)
    inputs = AdvantageInputs(
        rewards, mask, torch.tensor([0, 0, 1, 1, 2, 2]), token_rewards=token_rewards
    )
    out = compute_advantages("grpo", inputs, AdvantageParams(alike_group_advantage=1.0))
    # pool [1, 1, 0, 0]: mean 0.5, std 0.5
    high = 0.5 / (0.5 + 1e-6)
    expected = torch.tensor([high] * 2 + [-high] * 2, dtype=torch.float64)
    torch.testing.assert_close(out.advantages[:4], expected.unsqueeze(-1).expand(4, 3))


reward_lists = st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=8, max_size=8)


@settings(max_examples=40, deadline=None)
@given(reward_lists, st.sampled_from(FAMILY), st.floats(0.1, 2.0))
def test_mixed_groups_keep_their_estimators_advantage(
    values: list[float], name: str, c: float
) -> None:
    rewards, groups = t(*values), [0, 0, 1, 1, 2, 2, 3, 3]
    plain = first_token(name, rewards, groups, 0.0)
    shaped = first_token(name, rewards, groups, c)
    pairs = rewards.view(4, 2)
    mixed = (pairs[:, 0] != pairs[:, 1]).repeat_interleave(2)
    assert torch.equal(plain[mixed], shaped[mixed])
    assert torch.equal(plain[~mixed], torch.zeros(int((~mixed).sum()), dtype=torch.float64))
    # alike samples: the sign of r minus the pool's mean, zero sum over the pool, linear in c
    pool = rewards[~mixed]
    assert torch.all(torch.sign(shaped[~mixed]) == torch.sign(pool - pool.mean()))
    assert abs(float(shaped[~mixed].sum())) < 1e-9
    half = first_token(name, rewards, groups, c / 2)
    torch.testing.assert_close(half[~mixed] * 2, shaped[~mixed])


def test_identical_ranks_give_the_single_process_result() -> None:
    # two data-parallel ranks holding the same batch: the all-reduced statistics are the
    # single batch's, so the scores are too
    rewards = t(1, 1, 0, 0, 1, 0)
    mask = torch.ones(6, 2, dtype=torch.bool)
    inputs = AdvantageInputs(rewards, mask, torch.tensor([0, 0, 1, 1, 2, 2]))
    params = AdvantageParams(alike_group_advantage=1.0)
    one = compute_advantages("grpo", inputs, params)
    two = compute_advantages("grpo", inputs, params, all_reduce_sum=lambda x: 2 * x)
    torch.testing.assert_close(one.advantages, two.advantages)


def test_negative_coefficient_is_refused() -> None:
    with pytest.raises(ValueError, match="alike_group_advantage"):
        AdvantageParams(alike_group_advantage=-0.1)


def test_config_copies_it_and_refuses_estimators_that_ignore_it() -> None:
    config = load_config(None, ["algorithm.alike_group_advantage=0.5"])
    assert config.to_domain().algorithm.advantage.alike_group_advantage == 0.5
    with pytest.raises(ValueError, match="alike_group_advantage is set but .*'reinforce_pp'"):
        load_config(
            None,
            ["algorithm.alike_group_advantage=0.5", "algorithm.advantage_estimator=reinforce_pp"],
        )
