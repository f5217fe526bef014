"""verdict_accuracy: parsed verdicts against expected scores, counted by hand."""

from __future__ import annotations

import pytest

from lightrft.domain.judge import JudgedResponse, verdict_accuracy


def test_counts_equal_scores_and_unparsable_ones() -> None:
    # 0.8 == 0.8 (right), 0.2 != 0.8 (wrong), None (unparsable, wrong), 0.2 == 0.2 (right)
    result = verdict_accuracy([0.8, 0.2, None, 0.2], [0.8, 0.8, 0.2, 0.2])
    assert (result.rows, result.correct, result.unparsable) == (4, 2, 1)
    assert result.accuracy == 0.5 and result.unparsable_rate == 0.25


def test_tolerance_and_empty() -> None:
    assert verdict_accuracy([0.3 + 1e-9], [0.3]).correct == 1
    assert verdict_accuracy([0.3 + 1e-3], [0.3]).correct == 0
    empty = verdict_accuracy([], [])
    assert empty.accuracy == 0.0 and empty.unparsable_rate == 0.0
    with pytest.raises(ValueError, match="2 parsed verdicts but 1"):
        verdict_accuracy([0.1, 0.2], [0.1])


def test_row_checks() -> None:
    with pytest.raises(ValueError, match="empty judgement"):
        JudgedResponse("r", "p", "a", "", 0.5)
    with pytest.raises(ValueError, match="non-finite"):
        JudgedResponse("r", "p", "a", "Score: 1", float("nan"))
