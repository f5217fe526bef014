"""Judge rows: judgement and/or label, read with the verdict parser the judge will be read
with; every bad row named by file, row and key; the built-in set is balanced and valid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightrft.adapters.datasets.bad_rows import BadRowsError
from lightrft.adapters.datasets.judge_rows import (
    JudgeRowSpec,
    in_memory_judge_rows,
    load_judge_rows,
    synthetic_judge_rows,
)
from lightrft.adapters.datasets.rendering import PromptFormat, PromptRenderer
from lightrft.adapters.reward_models.verdict import LabelVerdict, ScoreVerdict
from tests.unit.adapters.datasets.tiny_tokenizers import byte_tokenizer

PLAIN = PromptRenderer(byte_tokenizer(None), PromptFormat(render="plain"))
GOOD = {"prompt": "2+2?", "response": "4", "judgement": "Right.\nScore: 9/10", "label": 9}


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_judgement_label_or_both() -> None:
    rows: list[dict[str, Any]] = [
        GOOD,
        {"prompt": "2+2?", "response": "5", "judgement": "Wrong.\nScore: 1/10"},
        {"prompt": "2+2?", "response": "5", "label": 0, "reference": "4"},
    ]
    read, skipped = in_memory_judge_rows(rows, PLAIN, ScoreVerdict(10))
    assert skipped == 0
    assert [(r.judgement, r.score, r.reference) for r in read] == [
        ("Right.\nScore: 9/10", 0.9, ""),
        ("Wrong.\nScore: 1/10", 0.1, ""),
        ("Score: 0/10", 0.0, "4"),  # a label alone trains on its verdict line
    ]
    assert read[0].uid == "rows:0" and read[0].prompt == "2+2?" and read[0].response == "4"


def test_label_verdicts() -> None:
    rows = [{"prompt": "q", "response": "a", "judgement": "Fine. [[A]]", "label": "A"}]
    read, _ = in_memory_judge_rows(rows, PLAIN, LabelVerdict({"A": 1.0, "B": 0.0}))
    assert read[0].score == 1.0


def test_chat_prompt_is_rendered_like_an_rl_prompt() -> None:
    chat = PromptRenderer(byte_tokenizer(), PromptFormat(system_prompt="Be brief."))
    rows = [{**GOOD, "prompt": [{"role": "user", "content": "2+2?"}]}]
    read, _ = in_memory_judge_rows(rows, chat, ScoreVerdict(10))
    assert read[0].prompt == chat.text([{"role": "user", "content": "2+2?"}])
    assert "Be brief." in read[0].prompt and "<|im_start|>assistant" in read[0].prompt


def test_every_bad_row_is_named_by_file_row_and_key(tmp_path: Path) -> None:
    bad: list[dict[str, Any]] = [
        GOOD,
        {"response": "4", "label": 9},  # row 1: no prompt
        {"prompt": "q", "response": "", "label": 9},  # row 2: empty response
        {"prompt": "q", "response": "4"},  # row 3: neither judgement nor label
        {"prompt": "q", "response": "4", "judgement": "Looks right."},  # row 4: no verdict
        {"prompt": "q", "response": "4", "judgement": "Score: 9/10", "label": 3},  # row 5
        {"prompt": "q", "response": "4", "label": 12},  # row 6: off the scale
        {"prompt": "q", "response": "4", "label": 9, "reference": 4},  # row 7: not a string
        {"prompt": [{"role": "assistant"}], "response": "4", "label": 9},  # row 8
    ]
    path = write(tmp_path / "judge.jsonl", bad)
    with pytest.raises(BadRowsError) as caught:
        load_judge_rows(path, PLAIN, ScoreVerdict(10))
    lines = str(caught.value).splitlines()
    assert lines[0] == "8 bad rows:"
    expected = [
        "judge.jsonl row 1: missing key 'prompt'",
        "judge.jsonl row 2: expected a non-empty string in 'response'",
        "judge.jsonl row 3: missing both 'label' and 'judgement'",
        "judge.jsonl row 4: no verdict ScoreVerdict can read",
        "judge.jsonl row 5: verdict reads 0.9 but label=3 reads 0.3 in 'judgement'",
        "judge.jsonl row 6: expected a number from 0 to 10, got 12 in 'label'",
        "judge.jsonl row 7: expected a string in 'reference'",
        "judge.jsonl row 8: expected a list of {role, content} messages in 'prompt'",
    ]
    for line, start in zip(lines[1:], expected, strict=True):
        assert line.strip().startswith(start), line
    read, skipped = load_judge_rows(path, PLAIN, ScoreVerdict(10), JudgeRowSpec(on_bad_row="skip"))
    assert len(read) == 1 and skipped == 8


def test_custom_keys(tmp_path: Path) -> None:
    spec = JudgeRowSpec(prompt_key="q", response_key="a", judgement_key="critique", label_key="y")
    path = write(tmp_path / "j.jsonl", [{"q": "2+2?", "a": "4", "critique": "ok Score: 7"}])
    with pytest.raises(BadRowsError, match="no verdict ScoreVerdict can read .* 'critique'"):
        load_judge_rows(path, PLAIN, ScoreVerdict(10), spec)
    write(path, [{"q": "2+2?", "a": "4", "critique": "ok\nScore: 7", "y": 7}])
    read, _ = load_judge_rows(path, PLAIN, ScoreVerdict(10), spec)
    assert read[0].score == pytest.approx(0.7)


def test_synthetic_rows_are_balanced_valid_and_decided_by_the_response() -> None:
    rows = synthetic_judge_rows(40, seed=3)
    read, skipped = in_memory_judge_rows(rows, PLAIN, ScoreVerdict(10))
    assert skipped == 0 and len(read) == 40
    scores = [r.score for r in read]
    assert scores.count(0.8) == scores.count(0.2) == 20
    for row in read:  # the verdict follows from whether the response states a number
        answered = any(ch.isdigit() for ch in row.response)
        assert row.score == (0.8 if answered else 0.2)
    assert synthetic_judge_rows(40, seed=3) == rows
