from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lightrft.domain.aggregation import AGG_MODES, AGGREGATIONS, LossNormalizer, aggregate
from lightrft.domain.groups import group_stats, zero_group_fraction
from lightrft.domain.masked import masked_mean, masked_whiten
from tests.helpers.simulated_ranks import run_on_ranks


def test_masked_mean_ignores_padding_even_nan() -> None:
    values = torch.tensor([[1.0, 3.0, float("nan")], [5.0, float("inf"), 0.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    # (1 + 3 + 5) / 3 = 3
    assert masked_mean(values, mask).item() == pytest.approx(3.0)
    # rows: (1 + 3) / 2 = 2 and 5 / 1 = 5
    assert masked_mean(values, mask, dim=-1).tolist() == [2.0, 5.0]


def test_masked_mean_refuses_empty_mask_and_mismatch() -> None:
    with pytest.raises(ValueError, match="mask selects no token"):
        masked_mean(torch.ones(2, 2), torch.zeros(2, 2))
    with pytest.raises(ValueError, match=r"mask has shape \(2, 3\) but values has shape \(2, 2\)"):
        masked_mean(torch.ones(2, 2), torch.ones(2, 3))


def test_masked_whiten_hand_computed() -> None:
    values = torch.tensor([[1.0, 2.0, 99.0], [3.0, 4.0, -7.0]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 0]])
    # kept 1,2,3,4: mean 2.5; Bessel var = (2.25+0.25+0.25+2.25)/3 = 5/3
    std = math.sqrt(5 / 3 + 1e-8)
    expected = torch.tensor([[-1.5 / std, -0.5 / std, 0.0], [0.5 / std, 1.5 / std, 0.0]])
    torch.testing.assert_close(masked_whiten(values, mask), expected)


def test_masked_whiten_two_ranks_equal_one_batch() -> None:
    torch.manual_seed(0)
    values, mask = torch.randn(6, 5), (torch.rand(6, 5) > 0.3).int()
    mask[:, 0] = 1
    halves = [(values[:3], mask[:3]), (values[3:], mask[3:])]
    parts = run_on_ranks(
        [lambda reduce, v=v, m=m: masked_whiten(v, m, all_reduce_sum=reduce) for v, m in halves]
    )
    torch.testing.assert_close(torch.cat(parts), masked_whiten(values, mask))


def test_group_stats_hand_computed() -> None:
    rewards = torch.tensor([1.0, 0.0, 4.0, 2.0, 7.0])
    groups = torch.tensor([5, 5, 9, 9, 3])
    stats = group_stats(rewards, groups)
    # group 5: mean 0.5, std sqrt(0.5); group 9: mean 3, std sqrt(2); group 3: mean 7, std 0
    torch.testing.assert_close(stats.mean, torch.tensor([0.5, 0.5, 3.0, 3.0, 7.0]))
    s = math.sqrt(0.5)
    torch.testing.assert_close(stats.std, torch.tensor([s, s, math.sqrt(2), math.sqrt(2), 0.0]))
    assert stats.size.tolist() == [2, 2, 2, 2, 1]


def test_aggregation_hand_computed() -> None:
    loss = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, float("nan")]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    norm = LossNormalizer(num_tokens=5, num_sequences=2, max_response_length=4)
    # token-mean: (1+2+3+4+5)/5 = 3
    assert aggregate(loss, mask, "token-mean", norm).item() == pytest.approx(3.0)
    # seq-mean-token-mean: (6/3 + 9/2)/2 = 3.25
    assert aggregate(loss, mask, "seq-mean-token-mean", norm).item() == pytest.approx(3.25)
    # seq-mean-token-sum: (6 + 9)/2 = 7.5
    assert aggregate(loss, mask, "seq-mean-token-sum", norm).item() == pytest.approx(7.5)
    # seq-mean-token-sum-norm: 15 / (2 * 4) = 1.875
    assert aggregate(loss, mask, "seq-mean-token-sum-norm", norm).item() == pytest.approx(1.875)
    assert set(AGGREGATIONS.names()) == set(AGG_MODES)


def test_aggregation_errors() -> None:
    with pytest.raises(KeyError, match="valid choices: seq-mean-token-mean"):
        aggregate(torch.ones(1, 1), torch.ones(1, 1), "mean")
    with pytest.raises(ValueError, match="max_response_length"):
        aggregate(torch.ones(1, 1), torch.ones(1, 1), "seq-mean-token-sum-norm")


@settings(deadline=None, max_examples=40)
@given(st.integers(1, 6), st.integers(1, 5), st.sampled_from(AGG_MODES), st.integers(0, 2**16))
def test_micro_batches_accumulate_to_full_batch_gradient(
    b: int, r: int, mode: str, seed: int
) -> None:
    gen = torch.Generator().manual_seed(seed)
    weights = torch.randn(b, r, generator=gen)
    mask = (torch.rand(b, r, generator=gen) > 0.3).int()
    mask[:, 0] = 1
    norm = LossNormalizer.from_mask(mask, max_response_length=r)
    full = torch.randn(b, r, generator=gen, requires_grad=True)
    aggregate(full * weights, mask, mode, norm).backward()
    split = full.detach().clone().requires_grad_(True)
    for rows in torch.arange(b).split(2):
        aggregate(split[rows] * weights[rows], mask[rows], mode, norm).backward()
    torch.testing.assert_close(split.grad, full.grad)


@settings(deadline=None, max_examples=50)
@given(st.floats(-1e3, 1e3, allow_nan=False, width=32), st.integers(1, 9))
def test_group_of_equal_values_has_exact_mean_and_zero_std(value: float, size: int) -> None:
    # e.g. three rewards of 0.9 in float32: naive sums give std ~7e-8 and a mean off by 1 ulp
    values = torch.full((size,), value, dtype=torch.float32)
    stats = group_stats(values, torch.zeros(size, dtype=torch.long))
    assert bool((stats.mean == values).all())
    assert bool((stats.std == 0).all())


def test_zero_group_fraction_hand_computed() -> None:
    # groups (ids 7, 2, 5): 7 has a non-zero advantage; 2 is zero where the mask counts
    # (its 9.0 is padding); 5 has a row of zeros and an empty row: 2 of 3 groups are zero
    values = torch.tensor([[0.0, 0.5], [0.0, 0.0], [0.0, 9.0], [0.0, 0.0], [0.0, 0.0], [3.0, 0.0]])
    mask = torch.tensor([[1, 1], [1, 1], [1, 0], [1, 1], [1, 1], [0, 0]])
    groups = torch.tensor([7, 7, 2, 2, 5, 5])
    assert zero_group_fraction(values, mask, groups).item() == pytest.approx(2 / 3)
    assert zero_group_fraction(values[:2], mask[:2], groups[:2]).item() == 0.0
    empty = torch.zeros(0, 2)
    assert zero_group_fraction(empty, empty, torch.zeros(0, dtype=torch.long)).item() == 0.0
