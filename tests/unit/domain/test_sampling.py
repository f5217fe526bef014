from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lightrft.domain.sampling import (
    DynamicSamplingState,
    FireSchedule,
    filter_logits,
    high_entropy_token_mask,
    informative_group_mask,
    token_temperature,
)
from lightrft.domain.types import SamplingParams

NAN = float("nan")


def test_informative_group_mask_hand_computed() -> None:
    # group 0: all 1 -> drop; group 1: 0, 1, 0 -> keep; group 2: seven times 0.1 -> drop
    # (a mean/std test would see std ~ 8e-9 > 0 here); group 3: one sample -> drop.
    rewards = torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 0.0] + [0.1] * 7 + [5.0])
    group_index = torch.tensor([0, 0, 0, 1, 1, 1] + [2] * 7 + [3])
    expected = [False] * 3 + [True] * 3 + [False] * 8
    assert informative_group_mask(rewards, group_index).tolist() == expected


def test_informative_group_mask_non_contiguous_groups() -> None:
    rewards = torch.tensor([1.0, 0.5, 1.0, 0.5, 0.0])
    group_index = torch.tensor([7, 3, 7, 3, 3])
    # group 7: 1, 1 -> drop; group 3: 0.5, 0.5, 0 -> keep
    assert informative_group_mask(rewards, group_index).tolist() == [False, True, False, True, True]


def test_informative_group_mask_bad_inputs() -> None:
    with pytest.raises(ValueError, match=r"rewards contains a non-finite .* at index \(1,\)"):
        informative_group_mask(torch.tensor([0.0, NAN]), torch.tensor([0, 0]))
    with pytest.raises(ValueError, match=r"group_index must have shape \(2\), got \(3,\)"):
        informative_group_mask(torch.tensor([0.0, 1.0]), torch.tensor([0, 0, 1]))


def test_dynamic_sampling_hits_round_limit() -> None:
    state = DynamicSamplingState(target_groups=8, max_rounds=3)
    assert not state.done
    state = state.after_round(3)  # kept 3, round 1
    state = state.after_round(2)  # kept 5, round 2
    assert (state.kept_groups, state.rounds, state.done) == (5, 2, False)
    state = state.after_round(1)  # kept 6 < 8 after round 3 = max_rounds
    assert state.done and state.hit_round_limit
    with pytest.raises(ValueError, match=r"already done \(6/8 groups after 3/3 rounds\)"):
        state.after_round(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.rounds = 0  # type: ignore[misc]


def test_dynamic_sampling_reaches_target() -> None:
    state = DynamicSamplingState(target_groups=4, max_rounds=10).after_round(0).after_round(5)
    # 0 + 5 = 5 >= 4 after 2 rounds: done without hitting the limit
    assert state == DynamicSamplingState(kept_groups=5, rounds=2, target_groups=4, max_rounds=10)
    assert state.done and not state.hit_round_limit


def test_dynamic_sampling_bad_inputs() -> None:
    with pytest.raises(ValueError, match="max_rounds must be an int >= 1, got 0"):
        DynamicSamplingState(target_groups=1, max_rounds=0)
    with pytest.raises(ValueError, match="target_groups must be an int >= 1"):
        DynamicSamplingState(target_groups=0, max_rounds=1)
    with pytest.raises(ValueError, match="num_informative_groups must be an int >= 0, got -1"):
        DynamicSamplingState(target_groups=1, max_rounds=1).after_round(-1)


def test_high_entropy_token_mask_hand_computed() -> None:
    entropy = torch.tensor([[0.1, 0.9, 0.5], [0.7, NAN, 0.2]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 1]])
    # n = 5 masked tokens. rho 0.4: ceil(0.4 * 5) = 2 -> 0.9 and 0.7
    out = high_entropy_token_mask(entropy, mask, 0.4)
    assert out.tolist() == [[False, True, False], [True, False, False]]
    # rho 0.5: ceil(2.5) = 3 -> 0.9, 0.7, 0.5
    out = high_entropy_token_mask(entropy, mask, 0.5)
    assert out.tolist() == [[False, True, True], [True, False, False]]
    # rho 0.01: ceil(0.05) = 1 -> at least one token (0.9)
    assert high_entropy_token_mask(entropy, mask, 0.01).sum().item() == 1
    # rho 1: every masked token
    assert high_entropy_token_mask(entropy, mask, 1.0).tolist() == mask.bool().tolist()


def test_high_entropy_token_mask_ties_and_rounding() -> None:
    # all equal: rho 0.5 of 4 -> 2 tokens, the first two in row-major order
    out = high_entropy_token_mask(torch.ones(2, 2), torch.ones(2, 2), 0.5)
    assert out.tolist() == [[True, True], [False, False]]
    # 0.28 * 25 is 7.000000000000001 in floating point; still 7 tokens, not 8
    assert high_entropy_token_mask(torch.rand(5, 5), torch.ones(5, 5), 0.28).sum().item() == 7
    # 0.3 * 10 = 3 exactly -> 3 tokens
    assert high_entropy_token_mask(torch.rand(2, 5), torch.ones(2, 5), 0.3).sum().item() == 3


def test_high_entropy_token_mask_bad_inputs() -> None:
    with pytest.raises(ValueError, match=r"top_fraction must be in \(0, 1\], got 0"):
        high_entropy_token_mask(torch.ones(1, 2), torch.ones(1, 2), 0.0)
    with pytest.raises(ValueError, match=r"top_fraction must be in \(0, 1\], got 1.5"):
        high_entropy_token_mask(torch.ones(1, 2), torch.ones(1, 2), 1.5)
    with pytest.raises(ValueError, match="response_mask selects no token"):
        high_entropy_token_mask(torch.ones(1, 2), torch.zeros(1, 2), 0.2)
    with pytest.raises(ValueError, match=r"entropy \(where response_mask is set\) contains a non"):
        high_entropy_token_mask(torch.tensor([[NAN, 1.0]]), torch.ones(1, 2), 0.2)


def test_fire_schedule() -> None:
    fire = FireSchedule(first_token_temperature=10.0, temperature=0.7)
    assert fire.temperature_at(0) == 10.0 and fire.temperature_at(1) == 0.7
    assert fire.temperature_at(500) == 0.7
    torch.testing.assert_close(fire.token_temperatures(3), torch.tensor([10.0, 0.7, 0.7]))
    assert fire.token_temperatures(1).tolist() == [10.0]
    assert fire.token_temperatures(0).shape == (0,)
    with pytest.raises(ValueError, match="position must be an int >= 0, got -1"):
        fire.temperature_at(-1)
    with pytest.raises(ValueError, match="first_token_temperature must be a positive"):
        FireSchedule(first_token_temperature=0.0, temperature=1.0)


def test_token_temperature_applies_fire_to_token_zero_only() -> None:
    fire = SamplingParams(temperature=0.7, first_token_temperature=10.0)
    assert [token_temperature(fire, i) for i in range(3)] == [10.0, 0.7, 0.7]
    plain = SamplingParams(temperature=0.7)
    assert [token_temperature(plain, i) for i in range(2)] == [0.7, 0.7]
    greedy_rest = SamplingParams(temperature=0.0, first_token_temperature=2.0)
    assert [token_temperature(greedy_rest, i) for i in range(2)] == [2.0, 0.0]
    with pytest.raises(ValueError, match="position must be an int >= 0"):
        token_temperature(plain, -1)


def _dropped(logits: torch.Tensor, **kwargs: float) -> list[list[bool]]:
    return torch.isinf(filter_logits(logits, **kwargs)).tolist()  # type: ignore[arg-type]


def test_filters_hand_computed() -> None:
    logits = torch.tensor([[0.0, 1.0, 2.0, 3.0, 4.0]])
    # probabilities exp(0..4) / sum: 0.012, 0.032, 0.086, 0.234, 0.636
    assert _dropped(logits, top_k=2) == [[True, True, True, False, False]]
    # nucleus 0.8: mass before 0.234 is 0.636 < 0.8 (kept); before 0.086 it is 0.87 (dropped)
    assert _dropped(logits, top_p=0.8) == [[True, True, True, False, False]]
    assert _dropped(logits, top_p=0.5) == [[True, True, True, True, False]]
    # min_p 0.1: floor 0.0636 keeps 0.086, 0.234, 0.636
    assert _dropped(logits, min_p=0.1) == [[True, True, False, False, False]]
    assert _dropped(logits) == [[False] * 5]
    # kept logits are unchanged
    torch.testing.assert_close(filter_logits(logits, top_k=2)[0, 3:], logits[0, 3:])


def test_filters_see_the_renormalized_distribution_in_order() -> None:
    # p = (0.4, 0.3, 0.2, 0.1). top_k=3 renormalizes to (4/9, 3/9, 2/9): top_p=0.75 then
    # drops the third (mass before it 7/9 = 0.778 >= 0.75); without top-k the mass before
    # it is 0.7 < 0.75 and it stays (the fourth goes: 0.9 >= 0.75).
    logits = torch.log(torch.tensor([[0.4, 0.3, 0.2, 0.1]]))
    assert _dropped(logits, top_k=3, top_p=0.75) == [[False, False, True, True]]
    assert _dropped(logits, top_p=0.75) == [[False, False, False, True]]
    # min_p compares with the largest probability: 0.3 * 0.4 = 0.12 drops only 0.1
    assert _dropped(logits, min_p=0.3) == [[False, False, False, True]]
    # ties at the k-th value are kept: top_k=2 of (0.4, 0.3, 0.3) keeps three tokens
    tied = torch.log(torch.tensor([[0.4, 0.3, 0.3]]))
    assert _dropped(tied, top_k=2) == [[False, False, False]]


def test_filters_refuse_bad_settings() -> None:
    with pytest.raises(ValueError, match="top_p"):
        filter_logits(torch.zeros(1, 3), top_p=0.0)
    with pytest.raises(ValueError, match="logits"):
        filter_logits(torch.zeros(3), top_k=1)


@settings(max_examples=50, deadline=None)
@given(
    hnp.arrays(
        np.float32,
        st.tuples(st.integers(1, 4), st.integers(1, 12)),
        elements=st.floats(-20, 20, width=32),
    ),
    st.integers(0, 12),
    st.floats(0.05, 1.0),
    st.floats(0.0, 0.99),
)
def test_filters_always_keep_the_most_likely_token(
    values: np.ndarray, top_k: int, top_p: float, min_p: float
) -> None:
    logits = torch.from_numpy(values)
    kept = filter_logits(logits, top_k=top_k, top_p=top_p, min_p=min_p)
    rows = torch.arange(logits.shape[0])
    assert torch.equal(kept[rows, logits.argmax(-1)], logits[rows, logits.argmax(-1)])
    assert torch.isfinite(kept).sum(-1).ge(1).all()
    # filtering more never keeps a token that filtering less dropped
    assert not (torch.isfinite(kept) & torch.isinf(filter_logits(logits, top_p=top_p))).any()


@settings(max_examples=50, deadline=None)
@given(
    rewards=st.lists(st.sampled_from([0.0, 0.1, 1.0]), min_size=1, max_size=16),
    data=st.data(),
)
def test_informative_mask_matches_reference_and_is_permutation_equivariant(
    rewards: list[float], data: st.DataObject
) -> None:
    groups = data.draw(st.lists(st.integers(0, 3), min_size=len(rewards), max_size=len(rewards)))
    r, g = torch.tensor(rewards), torch.tensor(groups)
    out = informative_group_mask(r, g)
    # reference: a group is informative iff it holds two distinct reward values
    distinct = {k: {v for v, h in zip(rewards, groups, strict=True) if h == k} for k in groups}
    assert out.tolist() == [len(distinct[k]) > 1 for k in groups]
    perm = torch.tensor(data.draw(st.permutations(range(len(rewards)))))
    assert torch.equal(informative_group_mask(r[perm], g[perm]), out[perm])


@settings(max_examples=50, deadline=None)
@given(
    b=st.integers(1, 4),
    r=st.integers(1, 8),
    percent=st.integers(1, 100),
    data=st.data(),
)
def test_high_entropy_mask_keeps_ceil_fraction_of_masked_tokens(
    b: int, r: int, percent: int, data: st.DataObject
) -> None:
    entropy = torch.from_numpy(
        data.draw(hnp.arrays(np.float32, (b, r), elements=st.sampled_from([0.0, 0.5, 1.0, 2.5])))
    )
    mask = torch.from_numpy(data.draw(hnp.arrays(np.bool_, (b, r))))
    mask[-1, -1] = True
    out = high_entropy_token_mask(entropy, mask, percent / 100)
    n = int(mask.sum())
    assert int(out.sum()) == -(-percent * n // 100)  # ceil(percent * n / 100), integer math
    assert not (out & ~mask).any()  # only masked tokens
    kept, dropped = entropy[out], entropy[mask & ~out]
    if dropped.numel():
        assert kept.min() >= dropped.max()  # the kept tokens are the highest-entropy ones
    # padding values never change the selection
    dirty = torch.where(mask, entropy, torch.tensor(data.draw(st.sampled_from([NAN, 1e9]))))
    assert torch.equal(high_entropy_token_mask(dirty, mask, percent / 100), out)
