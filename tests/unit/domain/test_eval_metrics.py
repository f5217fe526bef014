"""pass@k, majority vote and maj@k against hand-computed cases."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lightrft.domain.eval_metrics import maj_at_k, majority_vote, pass_at_k


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 2, 0.7),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (10, 3, 1, 0.3),  # pass@1 is the fraction correct
        (4, 0, 2, 0.0),
        (4, 4, 1, 1.0),
        (4, 3, 2, 1.0),  # n - c = 1 < k: every pair holds a correct sample
        (8, 1, 4, 0.5),  # 1 - C(7,4)/C(8,4) = 1 - 35/70
    ],
)
def test_pass_at_k_hand_cases(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


@given(st.integers(1, 3000), st.data())
def test_pass_at_k_equals_the_exact_binomial_ratio(n: int, data: st.DataObject) -> None:
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    exact = 1 - Fraction(comb(n - c, k), comb(n, k)) if n - c >= k else Fraction(1)
    assert pass_at_k(n, c, k) == pytest.approx(float(exact), abs=1e-9)


def test_pass_at_k_rejects_bad_k() -> None:
    with pytest.raises(ValueError, match="k must be in"):
        pass_at_k(4, 1, 5)


def test_majority_vote_rules() -> None:
    assert majority_vote(["a", "b", "a", None]) == 0  # a: 2 votes, first at 0
    assert majority_vote(["b", "a", "a"]) == 1  # a wins 2:1, its first sample is 1
    assert majority_vote(["b", "a", "a", "b"]) == 0  # 2:2 tie: b appeared first
    assert majority_vote([None, "c", None]) == 1  # samples without answers do not vote
    assert majority_vote([None, None]) is None


def test_maj_at_k_hand_cases() -> None:
    keys = ["7", "5", "5", "7", "7"]
    correct = [True, False, False, True, True]  # "7" is right
    assert maj_at_k(keys, correct, 1) == 1.0  # first sample alone: 7
    assert maj_at_k(keys, correct, 3) == 0.0  # 7, 5, 5 -> 5
    assert maj_at_k(keys, correct, 4) == 1.0  # 2:2 tie -> 7 came first
    assert maj_at_k(keys, correct, 5) == 1.0  # 3:2 -> 7
    assert maj_at_k([None, None], [False, False], 2) == 0.0  # no answer: wrong
