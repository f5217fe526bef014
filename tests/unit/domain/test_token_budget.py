"""Token-budget partition: hand-computed cases and invariants over random lengths."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightrft.domain.token_budget import plan_token_budget


def test_hand_computed_balanced_partition() -> None:
    lengths = [7, 3, 5, 6, 2, 4]
    plan = plan_token_budget(lengths, 10)
    # 27 tokens / 10 -> 3 bins. Largest first into the least-loaded bin:
    # 7 (s0) -> b0, 6 (s3) -> b1, 5 (s2) -> b2, 4 (s5) -> b2 (9), 3 (s1) -> b1 (9),
    # 2 (s4) -> b0 (9). Loads 9, 9, 9; bins by first sample: {0, 4}, {1, 3}, {2, 5}.
    assert plan.batches == ((0, 4), (1, 3), (2, 5))
    assert plan.loads(lengths) == [9, 9, 9]
    assert plan.oversized == ()


def test_groups_stay_together_when_they_fit() -> None:
    lengths = [3, 3, 4, 4, 2, 2]
    groups = [0, 0, 1, 1, 2, 2]
    plan = plan_token_budget(lengths, 8, groups=groups)
    # units: g0 = 6, g1 = 8, g2 = 4 tokens; 18 / 8 -> 3 bins, one group each
    assert plan.batches == ((0, 1), (2, 3), (4, 5))


def test_a_group_over_the_budget_is_cut_in_order() -> None:
    plan = plan_token_budget([4, 4, 4], 8, groups=[5, 5, 5])
    # the group (12) is cut into [s0, s1] (8) and [s2] (4); 12 / 8 -> 2 bins
    assert plan.batches == ((0, 1), (2,))


def test_a_sample_over_the_budget_sits_alone() -> None:
    plan = plan_token_budget([2, 30, 3], 10)
    assert (1,) in plan.batches and plan.oversized == (1,)
    assert sorted(i for b in plan.batches for i in b) == [0, 1, 2]


def test_a_larger_count_spreads_the_samples_or_pads_with_empty_batches() -> None:
    assert plan_token_budget([5, 5], 10).batches == ((0, 1),)
    # two bins asked: one sample each
    assert plan_token_budget([5, 5], 10, count=2).batches == ((0,), (1,))
    # three asked for two samples: the third is empty
    assert plan_token_budget([5, 5], 10, count=3).batches == ((0,), (1,), ())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lengths": [1], "budget": 0}, "budget must be >= 1"),
        ({"lengths": [1, -2], "budget": 4}, "sample 1 has -2"),
        ({"lengths": [1, 2], "budget": 4, "groups": [0]}, "groups has 1 entries"),
        ({"lengths": [1], "budget": 4, "count": 0}, "count must be >= 1"),
    ],
)
def test_bad_input_is_named(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        plan_token_budget(**kwargs)


lengths_st = st.lists(st.integers(0, 60), min_size=0, max_size=40)


@settings(max_examples=200, deadline=None)
@given(
    lengths=lengths_st,
    budget=st.integers(1, 80),
    group_size=st.integers(0, 5),
    extra=st.integers(0, 4),
)
def test_every_sample_once_and_no_batch_over_the_budget_but_a_lone_sample(
    lengths: list[int], budget: int, group_size: int, extra: int
) -> None:
    groups = [i // group_size for i in range(len(lengths))] if group_size else None
    base = plan_token_budget(lengths, budget, groups=groups)
    for plan in (base, plan_token_budget(lengths, budget, groups=groups, count=base.count + extra)):
        flat = [i for batch in plan.batches for i in batch]
        assert sorted(flat) == list(range(len(lengths)))  # every sample exactly once
        for batch, load in zip(plan.batches, plan.loads(lengths), strict=True):
            if load > budget:
                assert len(batch) == 1 and batch[0] in plan.oversized
            assert list(batch) == sorted(batch)
        assert set(plan.oversized) == {i for i, n in enumerate(lengths) if n > budget}
        # empty micro-batches only at the end
        sizes = [len(b) for b in plan.batches]
        assert sizes == sorted(sizes, key=lambda n: n == 0)
        if plan is base:
            assert 0 not in sizes or not lengths  # no empty batch unless asked for
    assert (
        base.count + extra
        == plan_token_budget(lengths, budget, groups=groups, count=base.count + extra).count
    )
    if groups is not None:  # a group that fits is never split
        for g in set(groups):
            members = [i for i, x in enumerate(groups) if x == g]
            if sum(lengths[i] for i in members) <= budget:
                assert sum(any(i in b for i in members) for b in base.batches) == 1


@settings(max_examples=100, deadline=None)
@given(lengths=st.lists(st.integers(1, 50), min_size=1, max_size=30), budget=st.integers(50, 120))
def test_deterministic_and_balanced(lengths: list[int], budget: int) -> None:
    plan = plan_token_budget(lengths, budget)
    assert plan == plan_token_budget(list(lengths), budget)
    loads = plan.loads(lengths)
    # LPT: the fullest bin exceeds the emptiest by at most the largest sample
    assert max(loads) - min(loads) <= max(lengths)
