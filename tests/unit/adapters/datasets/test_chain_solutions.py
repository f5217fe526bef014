"""Worked solutions of the built-in chains and the exact Math-Shepherd labels of any response."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightrft.adapters.datasets.chain_solutions import (
    line_labels,
    worked_chain_rows,
    worked_solution,
)
from lightrft.adapters.datasets.synthetic_steps import DIFFICULTIES, chain_problems

CHAIN = {"start": 7, "ops": [["+", 5], ["*", 3]]}  # 7 + 5 = 12, 12 * 3 = 36


def test_the_worked_solution_of_a_chain() -> None:
    assert worked_solution(CHAIN) == "7 + 5 = 12\n12 * 3 = 36\n#### 36"


@pytest.mark.parametrize(
    ("lines", "labels"),
    [
        (["7 + 5 = 12", "12 * 3 = 36", "#### 36"], [True, True, True]),
        (["7 + 5 = 13", "13 * 3 = 39", "#### 39"], [False, False, False]),
        (["7 + 5 = 12", "12 * 3 = 35", "#### 35"], [True, False, False]),
        # the right answer after a wrong step is still bad: the process is wrong
        (["7 + 5 = 12", "12 * 3 = 37", "#### 36"], [True, False, False]),
        (["7 + 5 = 12", "", "12 * 3 = 36", "#### 36"], [True, True, True, True]),
        (["7 + 5 = 12", "#### 12"], [True, False]),  # an answer before the last operation
        (["7 + 5 = 12", "so", "12 * 3 = 36"], [True, False, False]),
        (["7 * 3 = 21"], [False]),  # the operations out of order
        (["The result of adding 5 to 7 is 12.", "12 * 3 = 36", "#### 36"], [True] * 3),
        (["7 + 5 = 12", "12 * 3 = 36", "#### 36", "#### 36"], [True] * 4),
        ([], []),
    ],
)
def test_line_labels_by_hand(lines: list[str], labels: list[bool]) -> None:
    assert line_labels(lines, CHAIN) == labels


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    length=st.integers(1, 4),
    difficulty=st.sampled_from(sorted(DIFFICULTIES)),
)
def test_every_worked_solution_is_right_throughout_and_ends_on_the_reference(
    seed: int, length: int, difficulty: str
) -> None:
    (problem,) = chain_problems(1, seed, length, difficulty)
    lines = worked_solution(problem["chain"]).split("\n")
    assert len(lines) == length + 1
    assert line_labels(lines, problem["chain"]) == [True] * (length + 1)
    assert lines[-1] == f"#### {problem['reference']}"
    ranges = DIFFICULTIES[difficulty]
    start = problem["chain"]["start"]
    assert ranges.start[0] <= start <= ranges.start[1]
    for symbol, operand in problem["chain"]["ops"]:
        low, high = ranges.factor if symbol == "*" else ranges.operand
        assert low <= operand <= high


def test_worked_rows_cover_every_length_and_answer_their_prompt() -> None:
    rows = worked_chain_rows(60, seed=3, max_length=3, difficulty="medium")
    assert rows == worked_chain_rows(60, seed=3, max_length=3, difficulty="medium")
    lengths = set()
    for row in rows:
        question = row["prompt"].split("\n")[0]
        operations = len(re.findall(r"(?:Add|Subtract|Multiply by) \d+\.", question))
        lines = row["completion"].split("\n")
        assert len(lines) == operations + 1 and lines[-1].startswith("#### ")
        lengths.add(operations)
    assert lengths == {1, 2, 3}


def test_an_unknown_difficulty_names_the_choices() -> None:
    with pytest.raises(ValueError, match="difficulty: 'hard' not among small, medium"):
        chain_problems(1, 0, 2, "hard")
    with pytest.raises(ValueError, match="max_length must be >= 1"):
        worked_chain_rows(1, max_length=0)
