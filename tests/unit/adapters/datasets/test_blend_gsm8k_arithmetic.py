"""BlendedPromptSource, the GSM8K preprocessor and the built-in arithmetic task."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from lightrft.adapters.datasets import (
    BadRowError,
    BlendedPromptSource,
    Gsm8kPreprocessor,
    InMemoryPromptSource,
    PromptFormat,
    arithmetic_problems,
    arithmetic_prompts,
    gsm8k_prompts,
    gsm8k_reference,
)
from lightrft.adapters.datasets.gsm8k import ANSWER_INSTRUCTION
from lightrft.domain.ports import PromptSource
from tests.unit.adapters.datasets.tiny_tokenizers import byte_tokenizer

GSM8K_DIR = Path("/work/shared/data/gsm8k")


def source(name: str, n: int) -> InMemoryPromptSource:
    rows = [{"prompt": f"{name} question {i}", "reference": str(i)} for i in range(n)]
    return InMemoryPromptSource(rows, byte_tokenizer(), name=name)


# ---- blending -------------------------------------------------------------------------


def test_blend_proportions_hold_approximately() -> None:
    a, b, c = source("a", 5), source("b", 50), source("c", 7)
    blend = BlendedPromptSource([a, b, c], [0.5, 0.3, 0.2], length=4000, seed=3)
    assert isinstance(blend, PromptSource) and len(blend) == 4000
    counts = Counter(blend[i].uid.split(":")[0] for i in range(len(blend)))
    # binomial std at n = 4000 is at most sqrt(4000 * 0.25) ~ 32 draws: allow ~4 std
    for name, p in (("a", 0.5), ("b", 0.3), ("c", 0.2)):
        assert abs(counts[name] - p * 4000) < 130, (name, counts)
    assert {blend[i].metadata["blend_source"] for i in range(10)} <= {0, 1, 2}


def test_blend_is_exactly_reproducible_and_seed_dependent() -> None:
    sources = [source("a", 6), source("b", 9)]
    first = BlendedPromptSource(sources, [1.0, 3.0], length=200, seed=11)
    again = BlendedPromptSource(sources, [1.0, 3.0], length=200, seed=11)
    other = BlendedPromptSource(sources, [1.0, 3.0], length=200, seed=12)
    uids = [first[i].uid for i in range(200)]
    assert uids == [again[i].uid for i in range(200)]
    assert uids == [first[i].uid for i in range(200)]  # random access is stable
    assert uids != [other[i].uid for i in range(200)]


def test_blend_walks_each_source_in_shuffled_epochs() -> None:
    a, b = source("a", 4), source("b", 3)
    blend = BlendedPromptSource([a, b], [1.0, 1.0], length=400, seed=0)
    from_a = [blend[i].uid for i in range(400) if blend[i].uid.startswith("a:")]
    # every full epoch of source a holds each of its 4 prompts exactly once
    for start in range(0, len(from_a) - 3, 4):
        assert sorted(from_a[start : start + 4]) == ["a:0", "a:1", "a:2", "a:3"]
    ordered = BlendedPromptSource([a, b], [1.0, 0.0], length=6, shuffle=False)
    assert [ordered[i].uid for i in range(6)] == ["a:0", "a:1", "a:2", "a:3", "a:0", "a:1"]


def test_blend_default_length_and_validation() -> None:
    a, b = source("a", 4), source("b", 3)
    assert len(BlendedPromptSource([a, b], [1, 1])) == 7
    with pytest.raises(ValueError):
        BlendedPromptSource([a, b], [1.0])
    with pytest.raises(ValueError):
        BlendedPromptSource([a, b], [0.0, 0.0])
    with pytest.raises(ValueError):
        BlendedPromptSource([a, b], [1.0, -1.0])


# ---- GSM8K ------------------------------------------------------------------------------


def test_gsm8k_reference() -> None:
    assert gsm8k_reference("She makes 9 * 2 = $<<9*2=18>>18.\n#### 18") == "18"
    assert gsm8k_reference("...\n#### 1,080") == "1080"
    assert gsm8k_reference("...\n#### -3") == "-3"
    with pytest.raises(ValueError):
        gsm8k_reference("no final answer")


def test_gsm8k_preprocessor_and_bad_rows(tmp_path: Path) -> None:
    row = {"question": "Tom has 3 apples and buys 4 more. How many?", "answer": "3+4=7\n#### 7"}
    mapped = Gsm8kPreprocessor()(row)
    assert mapped == {"prompt": f"{row['question']}\n{ANSWER_INSTRUCTION}", "reference": "7"}
    assert "####" in ANSWER_INSTRUCTION and "\\boxed{}" in ANSWER_INSTRUCTION
    path = tmp_path / "gsm.jsonl"
    path.write_text(
        json.dumps(row) + "\n" + json.dumps({"question": "Q?", "answer": "no marker"}) + "\n"
    )
    with pytest.raises(BadRowError, match=r"gsm\.jsonl row 1: missing key 'answer'"):
        gsm8k_prompts(path, byte_tokenizer(), cache_dir=tmp_path / "c")
    skipping = gsm8k_prompts(path, byte_tokenizer(), on_bad_row="skip", cache_dir=tmp_path / "c")
    assert len(skipping) == 1 and skipping.stats.skipped_bad_rows == 1


@pytest.mark.skipif(not (GSM8K_DIR / "test.jsonl").exists(), reason="GSM8K not available")
def test_gsm8k_real_rows(tmp_path: Path) -> None:
    lines = (GSM8K_DIR / "test.jsonl").read_text().splitlines()[:3]
    rows = [json.loads(line) for line in lines]
    sample = tmp_path / "gsm8k_head.jsonl"
    sample.write_text("\n".join(lines) + "\n")
    dataset = gsm8k_prompts(sample, byte_tokenizer(), cache_dir=tmp_path / "c")
    assert len(dataset) == 3
    # first test row: Janet's ducks, 16 - 3 - 4 = 9 eggs at $2 -> 18
    assert dataset[0].reference == "18"
    for record, row in zip((dataset[i] for i in range(3)), rows, strict=True):
        assert record.reference == row["answer"].split("####")[-1].strip().replace(",", "")
        assert row["question"].strip() in record.prompt_text
        assert record.prompt_text.startswith("<s><|im_start|>user\n")
        assert record.prompt_text.endswith(
            f"{ANSWER_INSTRUCTION}<|im_end|>\n<|im_start|>assistant\n"
        )
        assert "####" not in record.prompt_text.replace(ANSWER_INSTRUCTION, "")  # no leaked answer
    assert dataset[0].uid == "gsm8k:0"


# ---- arithmetic ----------------------------------------------------------------------------

_SOLVERS = [
    (r"has (\d+) \w+ and buys (\d+) more\.", lambda a, b: a + b),
    (r"has (\d+) \w+ and gives (\d+) to a friend\.", lambda a, b: a - b),
    (r"buys (\d+) bags with (\d+) \w+ in each bag\.", lambda a, b: a * b),
    (r"shares (\d+) \w+ equally among (\d+) friends\.", lambda a, b: a // b),
    (r"has (\d+) \w+, buys (\d+) more and then gives away (\d+)\.", lambda a, b, c: a + b - c),
    (r"buys (\d+) boxes of (\d+) \w+ and loses (\d+)\.", lambda a, b, c: a * b - c),
]


def solve(problem: str) -> int:
    """Independent solution of a generated problem, read back from its text."""
    for pattern, rule in _SOLVERS:
        match = re.search(pattern, problem)
        if match:
            return int(rule(*map(int, match.groups())))
    raise AssertionError(f"unknown problem shape: {problem}")


@pytest.mark.parametrize("difficulty", [1, 2, 3])
def test_arithmetic_answers_are_exact_and_deterministic(difficulty: int) -> None:
    rows = arithmetic_problems(60, seed=5, difficulty=difficulty)
    assert rows == arithmetic_problems(60, seed=5, difficulty=difficulty)
    assert rows != arithmetic_problems(60, seed=6, difficulty=difficulty)
    for row in rows:
        answer = int(row["reference"])
        assert answer == solve(row["prompt"]) and answer >= 0
        assert len(row["prompt"]) < 120  # short prompts for the CPU demo
    if difficulty == 3:
        assert any("then gives away" in row["prompt"] for row in rows)


def test_arithmetic_prompts_use_the_tokenizer_path() -> None:
    tokenizer = byte_tokenizer()
    prompts = arithmetic_prompts(8, seed=1, difficulty=2, tokenizer=tokenizer)
    problems = arithmetic_problems(8, seed=1, difficulty=2)
    assert isinstance(prompts, PromptSource) and len(prompts) == 8
    record = prompts[0]
    assert record.reference == problems[0]["reference"]
    user = f'{problems[0]["prompt"]} Give the final answer after "####".'
    expected = f"<s><|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
    assert record.prompt_text == expected
    assert (
        list(record.prompt_token_ids) == tokenizer(expected, add_special_tokens=False)["input_ids"]
    )
    assert len({prompts[i].uid for i in range(8)}) == 8
    plain = arithmetic_prompts(2, tokenizer=tokenizer, prompt_format=PromptFormat(render="plain"))
    assert (
        plain[0].prompt_text
        == f'{arithmetic_problems(1)[0]["prompt"]} Give the final answer after "####".'
    )


def test_arithmetic_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        arithmetic_problems(0)
    with pytest.raises(ValueError):
        arithmetic_problems(3, difficulty=4)
