"""The verdict parsers against a table of judge outputs, well-formed and malformed."""

from __future__ import annotations

import pytest

from lightrft.adapters.reward_models.verdict import LabelVerdict, ScoreVerdict

SCORE_TABLE = [
    ("Score: 7/10", 0.7),
    ("The answer is right.\nScore: 7/10", 0.7),
    ("score: 7", 0.7),  # scale max_score = 10
    ("Final score: 10/10.", 1.0),
    ("**Score:** 8/10", 0.8),
    ("**Score: 3/5**", 0.6),
    ("Score = 0/10", 0.0),
    ("SCORE: 2.5/10", 0.25),
    ("Score: 7/10\nScore: 7/10", 0.7),  # repeated, consistent
    ("  Score : 9 / 10  ", 0.9),
    ("Reasoning...\n\nScore: 4\n", 0.4),
    # malformed or ambiguous: refused
    ("", None),
    ("I think it deserves a 7/10", None),  # no "Score:" line
    ("Score: 11/10", None),  # outside the scale
    ("Score: -1/10", None),
    ("Score: 12", None),  # above max_score
    ("Score: 7/10\nScore: 3/10", None),  # two different verdicts
    ("Score: seven", None),
    ("Score: 7/0", None),
    ("Score: 7 out of 10", None),
    ("The score: 7/10 is what I would give", None),  # not a verdict line
    ("Score:", None),
    ("Score: 7/10 because it is good", None),
    ("Scores: 7/10", None),
]

LABEL_TABLE = [
    ("[[A]]", 1.0),
    ("Response A is better. [[A]]", 1.0),
    ("Verdict: [[B]]", 0.0),
    ("[[ A ]]", 1.0),
    ("[[A]] ... to repeat: [[A]]", 1.0),
    ("[[A]] or maybe [[B]]", None),  # two different labels
    ("[[C]]", None),  # unknown label
    ("[A]", None),
    ("A", None),
    ("[[a]]", None),  # labels are case-sensitive
    ("", None),
]


@pytest.mark.parametrize(("text", "expected"), SCORE_TABLE)
def test_score_verdicts(text: str, expected: float | None) -> None:
    got = ScoreVerdict(max_score=10).parse(text)
    assert got == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize(("text", "expected"), LABEL_TABLE)
def test_label_verdicts(text: str, expected: float | None) -> None:
    assert LabelVerdict({"A": 1.0, "B": 0.0}).parse(text) == expected


def test_table_is_large_enough() -> None:
    assert len(SCORE_TABLE) + len(LABEL_TABLE) >= 20
    assert sum(expected is None for _, expected in SCORE_TABLE + LABEL_TABLE) >= 10


def test_bad_parser_settings() -> None:
    with pytest.raises(ValueError):
        ScoreVerdict(max_score=0)
    with pytest.raises(ValueError):
        LabelVerdict({})
