from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lightrft.domain.rewards import (
    RunningMoments,
    clip_values,
    normalize_rewards,
    overlong_penalty,
    weighted_reward_sum,
)
from tests.helpers.simulated_ranks import run_on_ranks

NAN = float("nan")


def test_overlong_penalty_at_the_boundaries() -> None:
    # L_max = 20, L_cache = 4: no penalty up to 20 - 4 = 16, linear in (16, 20], -1 beyond.
    lengths = torch.tensor([0, 16, 17, 18, 20, 21, 100])
    # 17: (16 - 17) / 4 = -0.25;  18: -2 / 4 = -0.5;  20: -4 / 4 = -1;  21, 100: -1
    expected = torch.tensor([0.0, 0.0, -0.25, -0.5, -1.0, -1.0, -1.0])
    torch.testing.assert_close(overlong_penalty(lengths, 20, 4), expected)
    # factor 0.5 halves every penalty
    torch.testing.assert_close(overlong_penalty(lengths, 20, 4, factor=0.5), expected * 0.5)
    # cache == max: the ramp starts at 0 -> 10 tokens of 20 gives -10 / 20 = -0.5
    torch.testing.assert_close(overlong_penalty(torch.tensor([10.0]), 20, 20), torch.tensor([-0.5]))


def test_overlong_penalty_bad_inputs() -> None:
    lengths = torch.tensor([5, 6])
    with pytest.raises(ValueError, match=r"cache_length \(8\) must not exceed max_length \(4\)"):
        overlong_penalty(lengths, 4, 8)
    with pytest.raises(ValueError, match="cache_length must be a positive finite number"):
        overlong_penalty(lengths, 4, 0)
    with pytest.raises(ValueError, match="response_lengths must be >= 0"):
        overlong_penalty(torch.tensor([-1, 3]), 4, 2)
    with pytest.raises(ValueError, match=r"response_lengths must have shape \(\*\), got \(1, 2\)"):
        overlong_penalty(lengths[None], 4, 2)
    with pytest.raises(ValueError, match="factor must be a non-negative finite number"):
        overlong_penalty(lengths, 4, 2, factor=-1.0)


def test_running_moments_hand_computed() -> None:
    m = RunningMoments.from_values(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    # mean 2.5; M2 = 2.25 + 0.25 + 0.25 + 2.25 = 5; Bessel var = 5 / 3
    assert (m.count, m.mean, m.m2) == (4.0, 2.5, 5.0)
    assert m.variance == pytest.approx(5 / 3)
    assert m.std == pytest.approx(math.sqrt(5 / 3))
    assert dataclasses.asdict(m) == {"count": 4.0, "mean": 2.5, "m2": 5.0}


def test_running_moments_merge_hand_computed() -> None:
    a = RunningMoments.from_values(torch.tensor([1.0, 2.0]))  # n 2, mean 1.5, M2 0.5
    b = RunningMoments.from_values(torch.tensor([3.0, 4.0]))  # n 2, mean 3.5, M2 0.5
    # n = 4, d = 2, mean = 1.5 + 2 * 2 / 4 = 2.5, M2 = 0.5 + 0.5 + 2^2 * 2 * 2 / 4 = 5
    assert a.merge(b) == RunningMoments(4.0, 2.5, 5.0)
    assert a.update(torch.tensor([3.0, 4.0])) == RunningMoments(4.0, 2.5, 5.0)
    empty = RunningMoments()
    assert empty.merge(a) == a and a.merge(empty) == a and empty.merge(empty) == empty
    assert empty.std == 0.0 and RunningMoments.from_values(torch.tensor([7.0])).std == 0.0


def test_running_moments_global_across_ranks() -> None:
    rank_values = [torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0, 10.0]), torch.tensor([])]
    results = run_on_ranks(
        [lambda reduce, v=v: RunningMoments.from_values(v, reduce) for v in rank_values]
    )
    # All of 1, 2, 3, 4, 10: mean 4; M2 = 9 + 4 + 1 + 0 + 36 = 50
    for m in results:
        assert m.count == 5.0 and m.mean == pytest.approx(4.0) and m.m2 == pytest.approx(50.0)
    # No values on any rank: the empty state.
    empty = run_on_ranks([lambda reduce: RunningMoments.from_values(torch.tensor([]), reduce)] * 2)
    assert empty == [RunningMoments(), RunningMoments()]


def test_running_moments_bad_inputs() -> None:
    with pytest.raises(ValueError, match=r"values contains a non-finite .* at index \(1,\)"):
        RunningMoments.from_values(torch.tensor([1.0, NAN]))
    with pytest.raises(ValueError, match="m2 must be a non-negative"):
        RunningMoments(2.0, 0.0, -1.0)
    with pytest.raises(ValueError, match="count must be a non-negative"):
        RunningMoments(-1.0, 0.0, 0.0)


def test_normalize_rewards_hand_computed() -> None:
    rewards = torch.tensor([1.0, 2.0, 3.0, 4.0])
    m = RunningMoments.from_values(rewards)
    std = math.sqrt(5 / 3) + 1e-8  # 1.29099445
    # (r - 2.5) / std = [-1.5, -0.5, 0.5, 1.5] / 1.29099445
    expected = torch.tensor([-1.5, -0.5, 0.5, 1.5]) / std
    torch.testing.assert_close(normalize_rewards(rewards, m), expected)
    # without mean subtraction: r / std
    torch.testing.assert_close(normalize_rewards(rewards, m, subtract_mean=False), rewards / std)
    with pytest.raises(ValueError, match="moments hold no values"):
        normalize_rewards(rewards, RunningMoments())
    with pytest.raises(ValueError, match=r"rewards contains a non-finite .* at index \(2,\)"):
        normalize_rewards(torch.tensor([1.0, 2.0, NAN]), m)


def test_clip_values() -> None:
    values = torch.tensor([[-3.0, -0.5], [2.0, 1.0]])
    # clamp to [-1, 1]
    torch.testing.assert_close(clip_values(values, 1.0), torch.tensor([[-1.0, -0.5], [1.0, 1.0]]))
    with pytest.raises(ValueError, match="bound must be a positive finite number, got 0"):
        clip_values(values, 0.0)
    with pytest.raises(ValueError, match="bound must be a positive finite number"):
        clip_values(values, -2.0)


def test_weighted_reward_sum_hand_computed() -> None:
    scores = {"format": torch.tensor([1.0, 1.0, 0.0]), "acc": torch.tensor([1, 0, 0])}
    # 1.0 * acc + 0.1 * format = [1 + 0.1, 0 + 0.1, 0 + 0] (int scores become float)
    out = weighted_reward_sum(scores, {"acc": 1.0, "format": 0.1})
    torch.testing.assert_close(out, torch.tensor([1.1, 0.1, 0.0]))
    # a negative weight subtracts: 1.0 * acc - 0.5 * format
    out = weighted_reward_sum(scores, {"format": -0.5, "acc": 1.0})
    torch.testing.assert_close(out, torch.tensor([0.5, -0.5, 0.0]))


def test_weighted_reward_sum_bad_inputs() -> None:
    scores = {"acc": torch.tensor([1.0, 0.0]), "len": torch.tensor([0.5, 0.5])}
    with pytest.raises(ValueError, match=r"no score for \['judge'\], no weight for \['len'\]"):
        weighted_reward_sum(scores, {"acc": 1.0, "judge": 1.0})
    with pytest.raises(ValueError, match=r"scores\['len'\] has shape \(3,\) but scores\['acc'\]"):
        weighted_reward_sum({**scores, "len": torch.zeros(3)}, {"acc": 1.0, "len": 1.0})
    with pytest.raises(ValueError, match=r"scores\['len'\] contains a non-finite value .* \(0,\)"):
        weighted_reward_sum({**scores, "len": torch.tensor([NAN, 0.0])}, {"acc": 1.0, "len": 1.0})
    with pytest.raises(ValueError, match=r"weights\['len'\] must be finite"):
        weighted_reward_sum(scores, {"acc": 1.0, "len": NAN})
    with pytest.raises(ValueError, match="scores is empty"):
        weighted_reward_sum({}, {})


finite = st.floats(-1e3, 1e3, allow_nan=False)


@settings(max_examples=50, deadline=None)
@given(values=st.lists(finite, min_size=0, max_size=30), cuts=st.lists(st.integers(0, 30)))
def test_merge_of_splits_equals_moments_of_concatenation(
    values: list[float], cuts: list[int]
) -> None:
    data = torch.tensor(values, dtype=torch.float64)
    bounds = sorted({0, len(values), *(c for c in cuts if c <= len(values))})
    merged = RunningMoments()
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        merged = merged.update(data[lo:hi])
    whole = RunningMoments.from_values(data)
    assert merged.count == whole.count == len(values)
    assert merged.mean == pytest.approx(whole.mean, abs=1e-9)
    assert merged.m2 == pytest.approx(whole.m2, rel=1e-9, abs=1e-6)
    if len(values) > 1:  # Bessel std agrees with torch's
        assert merged.std == pytest.approx(data.std().item(), rel=1e-9, abs=1e-6)


@settings(max_examples=50, deadline=None)
@given(values=st.lists(finite, min_size=2, max_size=30))
def test_normalized_batch_has_zero_mean_unit_std(values: list[float]) -> None:
    rewards = torch.tensor(values, dtype=torch.float64)
    moments = RunningMoments.from_values(rewards)
    out = normalize_rewards(rewards, moments)
    # float64 rounding of the mean (~1e-16 * max|r|) is divided by the std: a batch of
    # large, nearly equal rewards gets a proportionally larger (still tiny) residual mean
    rounding = 1e-13 * float(rewards.abs().max()) / max(moments.std, 1e-12)
    assert out.mean().item() == pytest.approx(0.0, abs=1e-6 + rounding)
    if moments.std > 1e-3:
        assert out.std().item() == pytest.approx(1.0, rel=1e-6)


@settings(max_examples=50, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 100), min_size=1, max_size=20),
    max_length=st.integers(1, 60),
    data=st.data(),
)
def test_overlong_penalty_is_monotone_and_bounded(
    lengths: list[int], max_length: int, data: st.DataObject
) -> None:
    cache = data.draw(st.integers(1, max_length))
    ordered = torch.tensor(sorted(lengths))
    out = overlong_penalty(ordered, max_length, cache, factor=2.0)
    assert (out <= 0).all() and (out >= -2.0).all()
    assert (out[1:] <= out[:-1]).all()  # longer responses never get a smaller penalty
    assert (out[ordered <= max_length - cache] == 0).all()
    assert (out[ordered > max_length] == -2.0).all()
