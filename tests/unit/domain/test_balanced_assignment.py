"""Balanced assignment of samples to data-parallel ranks: properties and worked examples."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightrft.domain.balanced_assignment import (
    balanced_assignment,
    contiguous_loads,
    imbalance,
)


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[int], int]:
    world = draw(st.integers(1, 6))
    per_rank = draw(st.integers(1, 8))
    # a mix of text samples (tens of tokens) and image samples (hundreds of patches)
    costs = draw(
        st.lists(
            st.one_of(st.integers(0, 60), st.integers(200, 2000)),
            min_size=world * per_rank,
            max_size=world * per_rank,
        )
    )
    return costs, world


@settings(max_examples=200, deadline=None)
@given(cases())
def test_every_sample_once_equal_counts_bounded_spread(case: tuple[list[int], int]) -> None:
    costs, world = case
    out = balanced_assignment(costs, world)
    flat = sorted(i for rank in out.ranks for i in rank)
    assert flat == list(range(len(costs)))  # every sample exactly once
    assert {len(rank) for rank in out.ranks} == {len(costs) // world}
    assert out.loads == tuple(sum(costs[i] for i in rank) for rank in out.ranks)
    assert max(out.loads) - min(out.loads) <= max(costs)  # spread bound


@settings(max_examples=100, deadline=None)
@given(cases())
def test_same_assignment_after_resume(case: tuple[list[int], int]) -> None:
    costs, world = case
    # a resumed run recomputes from the same inputs (no hidden state): identical result
    assert balanced_assignment(list(costs), world) == balanced_assignment(tuple(costs), world)


def test_worked_example_spreads_the_images() -> None:
    # 2 ranks x 3 samples; the images (cost 500) all sit in the first half of the step
    costs = [500, 500, 500, 10, 20, 30]
    assert contiguous_loads(costs, 2) == (1500, 60)
    out = balanced_assignment(costs, 2)
    # descending: 500(0)->r0, 500(1)->r1, 500(2)->r0 (tie, lower rank), 30(5)->r1,
    # 20(4)->r1 (530 < 1000), then r1 is full: 10(3)->r0 => r0 {0,2,3}=1010, r1 {1,4,5}=550
    assert out.ranks == ((0, 2, 3), (1, 4, 5))
    assert out.loads == (1010, 550)
    assert imbalance(contiguous_loads(costs, 2)) == pytest.approx(1500 / 780 - 1)
    assert out.imbalance == pytest.approx(1010 / 780 - 1)


def test_uneven_split_is_refused() -> None:
    with pytest.raises(ValueError, match="5 samples cannot be split evenly over 2 ranks"):
        balanced_assignment([1, 2, 3, 4, 5], 2)
