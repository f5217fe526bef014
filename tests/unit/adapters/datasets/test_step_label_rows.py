"""Step-labelled rows in their three layouts (steps + labels, PRM800K ratings, Math-Shepherd /
the original's tagged text), the built-in chain set, and bad rows named by file, row and key."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from lightrft.adapters.datasets.bad_rows import BadRowsError
from lightrft.adapters.datasets.rendering import PromptFormat, PromptRenderer
from lightrft.adapters.datasets.step_label_rows import (
    StepRowSpec,
    in_memory_step_rows,
    load_step_rows,
)
from lightrft.adapters.datasets.synthetic_steps import (
    chain_problems,
    step_correctness,
    synthetic_step_rows,
)
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer

PLAIN = PromptRenderer(tiny_tokenizer(), PromptFormat(render="plain"))


def write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_three_layouts(tmp_path: Path) -> None:
    rows = [
        {"prompt": "2+3*2?", "steps": ["2+3=5", "5*2=11"], "labels": ["+", "-"]},
        {"question": "1+1?", "steps": ["1+1=2"], "labels": [True]},
        {"prompt": "x?", "steps": ["a", "b", "c"], "labels": [1, 0.25, 0]},
        {"prompt": "y?", "steps": ["a", "b", "c"], "ratings": [1, 0, -1]},
        # Math-Shepherd: the label text is the input with each tag replaced by its mark
        {
            "input": "Q 2+2? Step 1: 2+2=4 ки\nStep 2: so 5 ки",
            "label": "Q 2+2? Step 1: 2+2=4 +\nStep 2: so 5 -",
        },
        # the original's layout: a list with one label per tag, the question split off
        {"question": "Q 3? ", "input": "Q 3? s1 ки s2 ки", "label": ["-", "+"]},
    ]
    examples, skipped = load_step_rows(write(tmp_path / "prm.jsonl", rows), PLAIN)
    assert skipped == 0
    assert [(e.prompt, e.steps, e.labels) for e in examples] == [
        ("2+3*2?", ("2+3=5", "5*2=11"), (1.0, 0.0)),
        ("1+1?", ("1+1=2",), (1.0,)),
        ("x?", ("a", "b", "c"), (1.0, 0.25, 0.0)),
        ("y?", ("a", "b", "c"), (1.0, 1.0, 0.0)),
        ("", ("Q 2+2? Step 1: 2+2=4 ", "\nStep 2: so 5 "), (1.0, 0.0)),
        ("Q 3? ", ("s1 ", " s2 "), (0.0, 1.0)),
    ]
    neutral_bad = StepRowSpec(neutral_label=0.0)
    (example,), _ = in_memory_step_rows([rows[3]], PLAIN, neutral_bad)
    assert example.labels == (1.0, 0.0, 0.0)


def test_bad_rows_are_named(tmp_path: Path) -> None:
    rows = [
        {"prompt": "q", "steps": ["a", "b"], "labels": ["+"]},
        {"prompt": "q", "steps": ["a"], "labels": ["?"]},
        {"prompt": "q", "steps": ["a"], "ratings": [2]},
        {"steps": ["a"], "labels": ["+"]},
        {"input": "no tags here", "label": "no tags here"},
        {"input": "a ки b ки", "label": "a + b"},
        {"prompt": "q", "steps": ["a"], "labels": ["+"]},
    ]
    path = write(tmp_path / "bad.jsonl", rows)
    with pytest.raises(BadRowsError) as caught:
        load_step_rows(path, PLAIN)
    text = str(caught.value)
    assert "6 bad rows" in text
    assert "bad.jsonl row 0: 1 labels for 2 steps in 'labels'" in text
    assert "row 1: label '?' is none of '+', '-'" in text
    assert "row 2: rating 2 is not 1, 0 or -1 in 'ratings'" in text
    assert "row 3: missing prompt (or question) 'prompt'" in text
    assert "row 4: expected text with step tags 'ки' in 'input'" in text
    assert "row 5: label text does not follow the input in 'label'" in text
    kept, skipped = load_step_rows(path, PLAIN, StepRowSpec(on_bad_row="skip"))
    assert len(kept) == 1 and skipped == 6


def test_chain_set_labels_follow_the_first_wrong_step() -> None:
    rows = synthetic_step_rows(50, seed=3)
    assert synthetic_step_rows(50, seed=3) == rows
    for row in rows:
        labels = row["labels"]
        first_bad = labels.index("-") if "-" in labels else len(labels)
        assert labels == ["+"] * first_bad + ["-"] * (len(labels) - first_bad)
    assert any("-" in r["labels"] for r in rows) and any("-" not in r["labels"] for r in rows)


def _chain_of(prompt: str) -> dict[str, object]:
    symbols = {"Add": "+", "Subtract": "-", "Multiply by": "*"}
    start = re.match(r"Start with (\d+)\.", prompt)
    assert start is not None
    ops = re.findall(r"(Add|Subtract|Multiply by) (\d+)\.", prompt)
    return {"start": int(start[1]), "ops": [[symbols[w], int(n)] for w, n in ops]}


def test_chain_set_labels_match_a_step_by_step_check_and_both_error_kinds_occur() -> None:
    rows = synthetic_step_rows(200, seed=5, length=2)
    arithmetic_right_but_wrong_numbers = arithmetic_wrong = 0
    for row in rows:
        verdicts = step_correctness("\n".join(row["steps"]), _chain_of(row["prompt"]))
        assert len(verdicts) == len(row["steps"]) == 2
        expected = ["+" if all(verdicts[: k + 1]) else "-" for k in range(2)]
        assert row["labels"] == expected, row
        for step, verdict in zip(row["steps"], verdicts, strict=True):
            a, symbol, b, _, c = step.split()
            computed = eval(f"{a} {symbol} {b}") == int(c)  # noqa: S307 (digits and an operator)
            if not verdict:
                arithmetic_right_but_wrong_numbers += computed
                arithmetic_wrong += not computed
    assert arithmetic_right_but_wrong_numbers > 20 and arithmetic_wrong > 20


def _labels_by_hand(lines: list[str], chain: dict[str, Any]) -> list[str]:
    """Each line is good while it and every line before it is right: a step is the chain's
    next operation on the right value with the right result, the answer line the chain's
    result; anything else is wrong."""
    value, ops, k, good, labels = chain["start"], chain["ops"], 0, True, []
    result = value
    for symbol, operand in ops:
        result = eval(f"{result} {symbol} {operand}")  # noqa: S307 (digits and an operator)
    for line in lines:
        step = re.fullmatch(r"(-?\d+) ([+*-]) (\d+) = (-?\d+)", line)
        if line.startswith("#### "):
            right = line == f"#### {result}" and k == len(ops)
        elif step is not None and k < len(ops):
            a, symbol, b, c = int(step[1]), step[2], int(step[3]), int(step[4])
            right = a == value and [symbol, b] == ops[k]
            right = right and c == eval(f"{a} {symbol} {b}")  # noqa: S307
            value, k = c, k + 1
        else:
            right = False
        good = good and right
        labels.append("+" if good else "-")
    return labels


def test_answer_lines_and_junk_lines_are_steps_labelled_by_the_chain() -> None:
    rows = synthetic_step_rows(300, seed=7, length=2, answer_step=True, junk_rate=0.4)
    assert rows == synthetic_step_rows(300, seed=7, length=2, answer_step=True, junk_rate=0.4)
    junk_rows = wrong_answers = 0
    for row in rows:
        steps = row["steps"]
        assert row["labels"] == _labels_by_hand(steps, _chain_of(row["prompt"])), row
        assert sum(s.startswith("#### ") for s in steps) == 1
        junk_rows += len(steps) == 4
        wrong_answers += len(steps) == 3 and row["labels"] == ["+", "+", "-"]
    assert 80 < junk_rows < 160 and wrong_answers > 10
    assert any(r["labels"] == ["+", "+", "+"] for r in rows)


def test_step_correctness_checks_each_step() -> None:
    chain = {"start": 7, "ops": [["+", 5], ["*", 3], ["-", 4]]}
    assert step_correctness("7 + 5 = 12\n12 * 3 = 36\n36 - 4 = 32\n#### 32", chain) == [True] * 3
    assert step_correctness("7 + 5 = 13\n13 * 3 = 39\n39 - 4 = 35", chain) == [False, False, False]
    assert step_correctness("7 + 5 = 12\n12 * 3 = 35\n", chain) == [True, False]
    (problem,) = chain_problems(1, seed=0)
    assert problem["reference"].lstrip("-").isdigit() and "####" in problem["prompt"]


_SENTENCE = re.compile(
    r"The result of (?:adding (?P<b1>\d+) to (?P<a1>-?\d+)"
    r"|subtracting (?P<b2>\d+) from (?P<a2>-?\d+)"
    r"|multiplying (?P<a3>-?\d+) by (?P<b3>\d+)) is (?P<c>-?\d+)\."
)


def _as_symbol(step: str) -> str:
    """A sentence step rewritten by hand as ``a op b = c`` (other lines unchanged)."""
    match = _SENTENCE.fullmatch(step)
    if match is None:
        return step
    k = next(k for k in "123" if match[f"a{k}"] is not None)
    return f"{match[f'a{k}']} {'+-*'[int(k) - 1]} {match[f'b{k}']} = {match['c']}"


def test_sentence_phrasing_keeps_numbers_and_labels_and_checks_like_symbols() -> None:
    kwargs: dict[str, Any] = {"length": 2, "answer_step": True, "junk_rate": 0.3}
    plain = synthetic_step_rows(200, seed=4, **kwargs)
    mixed = synthetic_step_rows(200, seed=4, phrasings=("symbol", "sentence"), **kwargs)
    sentences = 0
    for a, b in zip(plain, mixed, strict=True):
        assert b["labels"] == a["labels"] and b["prompt"] == a["prompt"]
        assert [_as_symbol(s) for s in b["steps"]] == a["steps"]
        sentences += sum(s.startswith("The result of") for s in b["steps"])
        chain = _chain_of(b["prompt"])
        assert step_correctness("\n".join(b["steps"]), chain) == step_correctness(
            "\n".join(a["steps"]), chain
        )
    assert 120 < sentences < 280  # about half of the ~400 worked steps
    chain = {"start": 6, "ops": [["-", 3], ["*", 4]]}
    text = "The result of subtracting 3 from 6 is 3.\nthe result of multiplying 3 by 4 is 11"
    assert step_correctness(text, chain) == [True, False]


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_wrong_result_share_sets_the_kind_of_each_wrong_step(share: float) -> None:
    rows = synthetic_step_rows(200, seed=6, length=2, error_rate=1.0, wrong_result_share=share)
    for row in rows:
        chain = _chain_of(row["prompt"])
        value = chain["start"]
        for step, (symbol, operand) in zip(row["steps"], chain["ops"], strict=True):
            a, op, b, _, c = step.split()
            right_numbers = (int(a), op, int(b)) == (value, symbol, operand)
            right_result = eval(f"{a} {op} {b}") == int(c)  # noqa: S307 (digits and an operator)
            if right_numbers and right_result:
                value = int(c)
                continue
            # the one wrong step: a wrong result on the right numbers, or the reverse
            assert (right_numbers, right_result) == ((True, False) if share else (False, True))
            break
        else:
            raise AssertionError(f"no wrong step in {row}")


def test_unknown_phrasing_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'poem'"):
        synthetic_step_rows(2, phrasings=("symbol", "poem"))


def test_rows_with_images(tmp_path: Path) -> None:
    from PIL import Image

    from tests.helpers.tiny_multimodal import tiny_mm_tokenizer

    Image.new("RGB", (28, 28), "red").save(tmp_path / "red.png")
    rows = [
        {"prompt": "colour?", "image": "red.png", "steps": ["it is", "red"], "labels": ["+", "+"]}
    ]
    renderer = PromptRenderer(tiny_mm_tokenizer(), PromptFormat(render="chat"))
    (example,), _ = load_step_rows(
        write(tmp_path / "vl.jsonl", rows), renderer, StepRowSpec(images_key="image")
    )
    assert example.multimodal is not None and len(example.multimodal["images"]) == 1
    assert "<|image_pad|>" in example.prompt and "colour?" in example.prompt
