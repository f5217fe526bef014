"""Verdict kinds for judge training: a label's verdict text parses back to the label's
score; bad labels are refused; the kind names agree across registry, config and CLI."""

from __future__ import annotations

import typing

import pytest

from lightrft.adapters.reward_models.verdict import (
    VERDICT_KINDS,
    LabelVerdict,
    ScoreVerdict,
    verdict_parser,
)
from lightrft.entrypoints.commands.rm import VERDICT_CHOICES
from lightrft.entrypoints.config.reward_model_configs import GenerativeRmConfig


@pytest.mark.parametrize(
    ("parser", "label", "text", "score"),
    [
        (ScoreVerdict(10), 8, "Score: 8/10", 0.8),
        (ScoreVerdict(10), 0, "Score: 0/10", 0.0),
        (ScoreVerdict(5), 2.5, "Score: 2.5/5", 0.5),
        (LabelVerdict({"A": 1.0, "B": 0.0}), "B", "[[B]]", 0.0),
        (LabelVerdict({"GOOD": 0.9, "BAD": -1.0}), "BAD", "[[BAD]]", -1.0),
    ],
)
def test_label_text_parses_back_to_its_score(
    parser: typing.Any, label: object, text: str, score: float
) -> None:
    assert parser.verdict_text(label) == text
    assert parser.label_score(label) == pytest.approx(score)
    assert parser.parse(f"Some reasoning.\n{text}") == pytest.approx(score)


@pytest.mark.parametrize(
    ("parser", "label", "message"),
    [
        (ScoreVerdict(10), 11, "from 0 to 10"),
        (ScoreVerdict(10), -1, "from 0 to 10"),
        (ScoreVerdict(10), "8", "from 0 to 10"),
        (ScoreVerdict(10), True, "from 0 to 10"),
        (LabelVerdict(), "C", r"labels \['A', 'B'\]"),
        (LabelVerdict(), 1, r"labels \['A', 'B'\]"),
    ],
)
def test_bad_labels(parser: typing.Any, label: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parser.label_score(label)
    with pytest.raises(ValueError, match=message):
        parser.verdict_text(label)


def test_kinds_agree_with_config_and_cli() -> None:
    literal = typing.get_args(GenerativeRmConfig.model_fields["verdict"].annotation)
    assert set(VERDICT_KINDS.names()) == set(literal) == set(VERDICT_CHOICES)
    assert verdict_parser("score", max_score=4) == ScoreVerdict(4)
    assert verdict_parser("label", labels={"X": 2.0}) == LabelVerdict({"X": 2.0})
    with pytest.raises(ValueError, match="valid choices: label, score"):
        verdict_parser("stars")
