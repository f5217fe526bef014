"""``alike_group_advantage``: a group whose samples all scored alike gets
c (r - m) / (s + eps) instead of 0, m and s the mean and population std of the batch's
rewards, on the steps its gate lets through; every other group keeps its estimator's own
advantage (hand values, invariants, the gate, the config's keys)."""

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
    # batch of six: mean 3/6 = 0.5, population std sqrt(6 * 0.25 / 6) = 0.5
    # alike: 0.5 * (1 - 0.5) / 0.5 = 0.5 and 0.5 * (0 - 0.5) / 0.5 = -0.5
    # mixed (GRPO): mean 0.5, Bessel std sqrt(0.5) -> +-0.5 / sqrt(0.5) = +-0.7071
    got = first_token("grpo", t(1, 1, 0, 0, 1, 0), [0, 0, 1, 1, 2, 2], 0.5)
    s = 0.5 * 0.5 / (0.5 + 1e-6)
    m = 0.5 / (math.sqrt(0.5) + 1e-6)
    torch.testing.assert_close(got, t(s, s, -s, -s, m, -m))


def test_unequal_batch_statistics() -> None:
    # rewards [0, 0, 0, 0, 1, 0, 0, 0]: batch mean 1/8, population variance
    # (7 * (1/8)^2 + (7/8)^2) / 8 = (7/64 + 49/64) / 8 = 7/64, std sqrt(7)/8
    # alike group [0, 0, 0, 0] with c = 1: (0 - 1/8) / (sqrt(7)/8) = -1/sqrt(7)
    got = first_token("dr_grpo", t(0, 0, 0, 0, 1, 0, 0, 0), [0, 0, 0, 0, 1, 1, 1, 1], 1.0)
    alike = -(1 / 8) / (math.sqrt(7) / 8 + 1e-6)
    torch.testing.assert_close(got[:4], torch.full((4,), alike, dtype=torch.float64))
    # the mixed group is dr_grpo's r - mean_group: 1 - 1/4 and 0 - 1/4
    torch.testing.assert_close(got[4:], t(0.75, -0.25, -0.25, -0.25))


def gated(
    logprob: float, max_entropy: float | None, max_reward: float | None
) -> tuple[Tensor, float]:
    # rewards [0, 0, 0, 0, 1, 0]: mean 1/6; every sampled token has log-prob ``logprob``
    rewards, mask = t(0, 0, 0, 0, 1, 0), torch.ones(6, 3, dtype=torch.bool)
    inputs = AdvantageInputs(
        rewards,
        mask,
        torch.tensor([0, 0, 1, 1, 2, 2]),
        sampled_logprobs=torch.full((6, 3), logprob, dtype=torch.float64),
    )
    params = AdvantageParams(
        alike_group_advantage=1.0,
        alike_group_max_entropy=max_entropy,
        alike_group_max_reward=max_reward,
    )
    out = compute_advantages("grpo", inputs, params)
    return out.advantages[:4, 0], float(out.metrics["groups/alike_trained"])


def test_the_gate_opens_below_both_thresholds_only() -> None:
    # entropy estimate 0.2 nats (log-prob -0.2), mean reward 1/6
    open_, trained = gated(-0.2, 0.3, 0.5)
    assert trained == 1.0 and bool((open_ < 0).all())
    for entropy_cap, reward_cap in [(0.1, 0.5), (0.3, 0.1), (0.15, None), (None, 0.15)]:
        shut, trained = gated(-0.2, entropy_cap, reward_cap)  # a cap at or under the value
        assert trained == 0.0 and torch.equal(shut, torch.zeros(4, dtype=torch.float64))
    ungated, trained = gated(-5.0, None, None)
    torch.testing.assert_close(ungated, open_)


def test_the_entropy_gate_needs_the_sampled_logprobs() -> None:
    inputs = AdvantageInputs(t(0, 0, 1, 0), torch.ones(4, 2), torch.tensor([0, 0, 1, 1]))
    params = AdvantageParams(alike_group_advantage=1.0, alike_group_max_entropy=0.3)
    with pytest.raises(ValueError, match="sampled_logprobs"):
        compute_advantages("grpo", inputs, params)


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
    rewards = t(1, 1, 0, 1)
    token_rewards = torch.tensor(
        [[0.0, 0, 1], [0, 0, 1], [0, 0, 0], [0, 1, 0]], dtype=torch.float64
    )
    mask = torch.ones(4, 3, dtype=torch.bool)
    inputs = AdvantageInputs(rewards, mask, torch.tensor([0, 0, 1, 1]), token_rewards=token_rewards)
    out = compute_advantages("grpo", inputs, AdvantageParams(alike_group_advantage=1.0))
    mean, std = 0.75, math.sqrt(0.1875)
    torch.testing.assert_close(
        out.advantages[:2], torch.full((2, 3), (1 - mean) / (std + 1e-6), dtype=torch.float64)
    )


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
    # alike samples: the sign of r minus the batch's mean, and linear in c
    centred = rewards - rewards.mean()
    assert torch.all(torch.sign(shaped[~mixed]) == torch.sign(centred[~mixed]))
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
    keys = [
        "algorithm.alike_group_advantage=0.5",
        "algorithm.alike_group_max_entropy=0.3",
        "algorithm.alike_group_max_reward=0.6",
    ]
    advantage = load_config(None, keys).to_domain().algorithm.advantage
    assert advantage.alike_group_advantage == 0.5
    assert (advantage.alike_group_max_entropy, advantage.alike_group_max_reward) == (0.3, 0.6)
    with pytest.raises(ValueError, match="alike_group_max_entropy gates .* which is 0"):
        load_config(None, ["algorithm.alike_group_max_entropy=0.3"])
    with pytest.raises(ValueError, match="alike_group_advantage is set but .*'reinforce_pp'"):
        load_config(
            None,
            ["algorithm.alike_group_advantage=0.5", "algorithm.advantage_estimator=reinforce_pp"],
        )


def test_sampled_logprobs_of_the_wrong_shape_or_nan_are_refused() -> None:
    params = AdvantageParams(alike_group_advantage=1.0, alike_group_max_entropy=0.3)
    for logprobs, message in [(torch.zeros(4, 3), "sampled_logprobs"), (None, "sampled_logprobs")]:
        inputs = AdvantageInputs(
            t(0, 0, 1, 0), torch.ones(4, 2), torch.tensor([0, 0, 1, 1]), sampled_logprobs=logprobs
        )
        with pytest.raises(ValueError, match=message):
            compute_advantages("grpo", inputs, params)
    nan = torch.tensor([[0.0, float("nan")]] * 4)
    inputs = AdvantageInputs(
        t(0, 0, 1, 0), torch.ones(4, 2), torch.tensor([0, 0, 1, 1]), sampled_logprobs=nan
    )
    with pytest.raises(ValueError, match="sampled_logprobs"):
        compute_advantages("grpo", inputs, params)
