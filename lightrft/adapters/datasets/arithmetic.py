"""A tiny built-in verifiable task: short arithmetic word problems with integer answers.

For the CPU demo and for tests: ``arithmetic_problems(n, seed, difficulty)`` gives rows
``{"prompt", "reference"}`` (deterministic in ``seed``), e.g. "Tom has 3 apples and buys 4
more. How many apples does Tom have now?" -> "7"; ``arithmetic_prompts`` renders them
through the same tokenizer path as the file datasets. Difficulty 1: one addition or
subtraction of numbers 2..9; 2: also multiplication and exact division, numbers up to 12;
3: two operations, numbers up to 20. Answers are never negative.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import Any, Literal

from lightrft.adapters.datasets.in_memory import InMemoryPromptSource
from lightrft.adapters.datasets.prompt_rows import RowSpec
from lightrft.adapters.datasets.rendering import PromptFormat

ARITHMETIC_INSTRUCTION = 'Give the final answer after "####".'

NAMES = ("Tom", "Ana", "Li", "Sam", "Mia", "Omar", "Eva", "Ben")
_ITEMS = ("apples", "pens", "cards", "coins", "books", "stickers", "marbles", "cookies")
_Problem = tuple[str, int, str]  # question, answer, worked solution ("3 + 4 = 7")
_Maker = Callable[[random.Random, str, str, int], _Problem]


def _add(rng: random.Random, who: str, item: str, top: int) -> _Problem:
    a, b = rng.randint(2, top), rng.randint(2, top)
    text = f"{who} has {a} {item} and buys {b} more. How many {item} does {who} have now?"
    return text, a + b, f"{a} + {b} = {a + b}"


def _subtract(rng: random.Random, who: str, item: str, top: int) -> _Problem:
    a, b = sorted((rng.randint(2, top), rng.randint(2, top)), reverse=True)
    text = f"{who} has {a} {item} and gives {b} to a friend. How many {item} are left?"
    return text, a - b, f"{a} - {b} = {a - b}"


def _multiply(rng: random.Random, who: str, item: str, top: int) -> _Problem:
    a, b = rng.randint(2, top), rng.randint(2, top)
    text = f"{who} buys {a} bags with {b} {item} in each bag. How many {item} is that?"
    return text, a * b, f"{a} * {b} = {a * b}"


def _divide(rng: random.Random, who: str, item: str, top: int) -> _Problem:
    a, b = rng.randint(2, top), rng.randint(2, top)
    text = f"{who} shares {a * b} {item} equally among {b} friends. How many {item} does each get?"
    return text, a, f"{a * b} / {b} = {a}"


def _add_then_subtract(rng: random.Random, who: str, item: str, top: int) -> _Problem:
    a, b = rng.randint(2, top), rng.randint(2, top)
    c = rng.randint(2, a + b)
    text = f"{who} has {a} {item}, buys {b} more and then gives away {c}. How many {item} are left?"
    return text, a + b - c, f"{a} + {b} - {c} = {a + b - c}"


def _multiply_then_subtract(rng: random.Random, who: str, item: str, top: int) -> _Problem:
    a, b = rng.randint(2, top), rng.randint(2, top)
    c = rng.randint(2, a * b)
    text = f"{who} buys {a} boxes of {b} {item} and loses {c}. How many {item} are left?"
    return text, a * b - c, f"{a} * {b} - {c} = {a * b - c}"


_LEVELS: dict[int, tuple[int, tuple[_Maker, ...]]] = {
    1: (9, (_add, _subtract)),
    2: (12, (_add, _subtract, _multiply, _divide)),
    3: (20, (_add_then_subtract, _multiply_then_subtract, _multiply, _divide)),
}


Split = Literal["train", "heldout", "all"]
HELDOUT_SHARE = 8
"""One problem in 8 (by a stable hash of its text) belongs to the held-out split."""


def in_split(text: str, split: Split) -> bool:
    """Whether problem ``text`` belongs to ``split``: the train and held-out splits are
    disjoint sets of problem texts, whatever the seeds that draw from them."""
    if split == "all":
        return True
    heldout = int(hashlib.sha256(text.encode()).hexdigest(), 16) % HELDOUT_SHARE == 0
    return heldout == (split == "heldout")


def arithmetic_problems(
    n: int, seed: int = 0, difficulty: int = 1, split: Split = "all"
) -> list[dict[str, str]]:
    """``n`` rows ``{"prompt": problem, "reference": integer answer, "solution": the worked
    equation, e.g. "3 + 4 = 7"}``, fixed by ``seed``, drawn from ``split`` (problems of the
    other split are skipped)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if difficulty not in _LEVELS:
        raise ValueError(f"difficulty must be one of {sorted(_LEVELS)}, got {difficulty}")
    top, makers = _LEVELS[difficulty]
    rng = random.Random(f"arithmetic-{seed}-{difficulty}")
    rows: list[dict[str, str]] = []
    while len(rows) < n:
        maker = rng.choice(makers)
        text, answer, solution = maker(rng, rng.choice(NAMES), rng.choice(_ITEMS), top)
        if in_split(text, split):
            rows.append({"prompt": text, "reference": str(answer), "solution": solution})
    return rows


def arithmetic_prompts(
    n: int,
    seed: int = 0,
    difficulty: int = 1,
    *,
    tokenizer: Any,
    prompt_format: PromptFormat | None = None,
    instruction: str = ARITHMETIC_INSTRUCTION,
    split: Split = "all",
) -> InMemoryPromptSource:
    """The problems of :func:`arithmetic_problems` as a prompt source, ``instruction``
    appended to each question; uids ``"arithmetic-<seed>-<difficulty>:<i>"``."""
    rows = arithmetic_problems(n, seed, difficulty, split)
    if instruction:
        rows = [{**row, "prompt": f"{row['prompt']} {instruction}"} for row in rows]
    return InMemoryPromptSource(
        rows,
        tokenizer,
        spec=RowSpec(input_key="prompt", reference_key="reference"),
        prompt_format=prompt_format,
        name=f"arithmetic-{seed}-{difficulty}",
    )
