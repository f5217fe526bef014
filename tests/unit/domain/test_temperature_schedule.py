"""``TemperatureSchedule``: piecewise-linear sampling temperature over 1-based steps, held at
the first point's value before it and the last point's after it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lightrft.domain.temperature_schedule import TemperatureSchedule


def test_a_two_point_anneal_by_hand() -> None:
    schedule = TemperatureSchedule.of([[1, 0.8], [6, 0.6]])
    # 0.8 - 0.2 * (step - 1) / 5
    expected = {1: 0.8, 2: 0.76, 3: 0.72, 4: 0.68, 5: 0.64, 6: 0.6, 7: 0.6, 50: 0.6}
    assert {s: round(schedule.at(s), 10) for s in expected} == expected
    assert schedule.final == 0.6


def test_several_points_hold_before_the_first_and_after_the_last() -> None:
    schedule = TemperatureSchedule.of([[3, 1.0], [5, 0.5], [9, 0.7]])
    assert schedule.at(1) == schedule.at(3) == 1.0
    assert schedule.at(4) == pytest.approx(0.75)
    assert schedule.at(5) == pytest.approx(0.5)
    assert schedule.at(7) == pytest.approx(0.6)  # half-way from 0.5 to 0.7
    assert schedule.at(9) == schedule.at(100) == pytest.approx(0.7)


@pytest.mark.parametrize(
    ("points", "message"),
    [
        ([], "at least one"),
        ([[0, 1.0]], "increasing"),
        ([[2, 1.0], [2, 0.5]], "increasing"),
        ([[3, 1.0], [1, 0.5]], "increasing"),
        ([[1, -0.1]], "step 1 has temperature -0.1"),
    ],
)
def test_bad_points_are_refused(points: list[list[float]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TemperatureSchedule.of(points)


@given(
    st.lists(
        st.tuples(st.integers(1, 40), st.floats(0, 2, allow_nan=False)), min_size=1, max_size=6
    ),
    st.integers(1, 60),
)
def test_each_step_lies_between_its_neighbouring_points(
    raw: list[tuple[int, float]], step: int
) -> None:
    points = sorted(dict(raw).items())  # distinct increasing steps
    schedule = TemperatureSchedule.of(points)
    value = schedule.at(step)
    before = [t for s, t in points if s <= step] or [points[0][1]]
    after = [t for s, t in points if s >= step] or [points[-1][1]]
    low, high = sorted((before[-1], after[0]))
    assert low - 1e-12 <= value <= high + 1e-12
    if any(s == step for s, _ in points):
        assert value == pytest.approx(dict(points)[step])
