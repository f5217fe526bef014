"""A built-in multi-step arithmetic task whose intermediate steps are checkable.

A problem is a chain: "Start with 7. Add 5. Multiply by 3. Subtract 4." with one worked step
per operation, ``7 + 5 = 12``, ``12 * 3 = 36``, ``36 - 4 = 32``, and the final answer after
``####``. :func:`chain_problems` gives RL prompt rows ``{"prompt", "reference", "chain"}``;
:func:`synthetic_step_rows` gives PRM training rows ``{"prompt", "steps", "labels"}`` in the
Math-Shepherd sense: a step is good (``+``) while every step up to it is right, and bad
(``-``) from the first wrong step on (later steps cannot reach the right answer any more);
a step is wrong when its result is, or when it computes rightly on a number the chain does
not have. With ``answer_step`` a row ends with its answer line ``#### N`` as one more step
(good when N is the chain's result); with ``junk_rate`` some rows carry one line that is not a
step of the chain (the instruction's example ``7 + 5 = 12``, a bare number, a run of ``#``, a
sentence: what a small policy writes instead of a step), bad like every step after it;
with ``phrasings`` each step is written in one of several :data:`PHRASINGS` (``7 + 5 = 12``,
or the sentence a chat model writes, ``The result of adding 5 to 7 is 12.``).
:func:`step_correctness` checks a response's steps, in any phrasing, against the chain (the
ground truth that the trained PRM is measured against). Deterministic in ``seed``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

OPERATIONS = (("Add", "+"), ("Subtract", "-"), ("Multiply by", "*"))
CHAIN_INSTRUCTION = (
    "Work it out one operation per line, like '7 + 5 = 12', then give the final answer "
    'after "####".'
)


@dataclass(frozen=True)
class Phrasing:
    """How a step ``a op b = c`` is written: ``render`` per operation symbol (a template over
    ``a``, ``b``, ``c``) and ``pattern`` per symbol, a regex whose named groups read it back."""

    render: dict[str, str]
    pattern: dict[str, re.Pattern[str]]

    def write(self, a: int, symbol: str, b: int, c: int) -> str:
        return self.render[symbol].format(a=a, b=b, c=c)

    def read(self, line: str) -> tuple[int, str, int, int] | None:
        for symbol, pattern in self.pattern.items():
            match = pattern.match(line)
            if match is not None:
                return int(match["a"]), symbol, int(match["b"]), int(match["c"])
        return None


def _phrasing(render: dict[str, str]) -> Phrasing:
    def pattern(template: str) -> re.Pattern[str]:
        text = re.escape(template).replace(r"\ ", r"\s*" if "=" in template else r"\s+")
        for name in ("a", "b", "c"):
            text = text.replace(re.escape("{" + name + "}"), f"(?P<{name}>-?\\d+)")
        if text.endswith(r"\."):
            text += "?"  # a sentence's full stop may be left out
        return re.compile(rf"^\s*{text}\s*$", re.IGNORECASE)

    return Phrasing(render, {symbol: pattern(t) for symbol, t in render.items()})


PHRASINGS: dict[str, Phrasing] = {
    "symbol": _phrasing({s: f"{{a}} {s} {{b}} = {{c}}" for s in ("+", "-", "*")}),
    "sentence": _phrasing(
        {
            "+": "The result of adding {b} to {a} is {c}.",
            "-": "The result of subtracting {b} from {a} is {c}.",
            "*": "The result of multiplying {a} by {b} is {c}.",
        }
    ),
}
"""The ways a step is written: ``symbol`` (the instruction's ``7 + 5 = 12``) and ``sentence``
(what SmolLM2-135M-Instruct writes when asked: ``The result of multiplying 9 by 4 is 36.``)."""


def read_step(line: str) -> tuple[int, str, int, int] | None:
    """``(a, symbol, b, c)`` of a line written in any of :data:`PHRASINGS` (None: not a step)."""
    return next((s for p in PHRASINGS.values() if (s := p.read(line)) is not None), None)


def phrasing_problem(names: Sequence[str]) -> str | None:
    """What is wrong with ``names`` as a choice of :data:`PHRASINGS` (None: nothing)."""
    known = ", ".join(PHRASINGS)
    unknown = [name for name in names if name not in PHRASINGS]
    if unknown:
        return f"{unknown} not among {known}"
    return None if names else f"give one or more of {known}"


def apply_operation(value: int, symbol: str, operand: int) -> int:
    """``value symbol operand`` for a symbol of :data:`OPERATIONS` (``+``, ``-``, ``*``)."""
    return (
        value + operand if symbol == "+" else value - operand if symbol == "-" else value * operand
    )


@dataclass(frozen=True)
class NumberRanges:
    """The inclusive ranges a chain's numbers are drawn from: the start, the operand of an
    addition or subtraction, the factor of a multiplication."""

    start: tuple[int, int]
    operand: tuple[int, int]
    factor: tuple[int, int]


DIFFICULTIES: dict[str, NumberRanges] = {
    "small": NumberRanges(start=(2, 9), operand=(2, 9), factor=(2, 4)),
    "medium": NumberRanges(start=(10, 19), operand=(2, 19), factor=(2, 5)),
}
"""``small``: one-digit numbers (what the base SmolLM2 knows by heart once it writes the
steps); ``medium``: a two-digit start and operands up to 19, results into the hundreds, where
a small policy gets about two steps in three right."""


def difficulty_problem(name: str) -> str | None:
    """What is wrong with ``name`` as a :data:`DIFFICULTIES` key (None: nothing)."""
    return None if name in DIFFICULTIES else f"{name!r} not among {', '.join(DIFFICULTIES)}"


def _ranges(difficulty: str) -> NumberRanges:
    problem = difficulty_problem(difficulty)
    if problem is not None:
        raise ValueError(f"difficulty: {problem}")
    return DIFFICULTIES[difficulty]


def _chain(
    rng: random.Random, length: int, ranges: NumberRanges = DIFFICULTIES["small"]
) -> tuple[int, list[tuple[str, str, int]]]:
    start = rng.randint(*ranges.start)
    ops = []
    for _ in range(length):
        word, symbol = rng.choice(OPERATIONS)
        operand = rng.randint(*ranges.factor) if symbol == "*" else rng.randint(*ranges.operand)
        ops.append((word, symbol, operand))
    return start, ops


def _question(start: int, ops: list[tuple[str, str, int]]) -> str:
    return (
        f"Start with {start}. " + " ".join(f"{w} {n}." for w, _, n in ops) + " What is the result?"
    )


def _rng(kind: str, seed: int, length: int, difficulty: str) -> random.Random:
    """The generator of ``kind`` rows (``small`` keeps the name it had before difficulties)."""
    suffix = "" if difficulty == "small" else f"-{difficulty}"
    return random.Random(f"{kind}-{seed}-{length}{suffix}")


def chain_problems(
    n: int, seed: int = 0, length: int = 3, difficulty: str = "small"
) -> list[dict[str, Any]]:
    """``n`` RL rows: ``prompt`` (question and instruction), ``reference`` (the answer) and
    ``chain`` (start and operations, for :func:`step_correctness`); numbers drawn from
    :data:`DIFFICULTIES` ``difficulty``."""
    ranges = _ranges(difficulty)
    rng = _rng("chain", seed, length, difficulty)
    rows = []
    for _ in range(n):
        start, ops = _chain(rng, length, ranges)
        value = start
        for _, symbol, operand in ops:
            value = apply_operation(value, symbol, operand)
        rows.append(
            {
                "prompt": f"{_question(start, ops)}\n{CHAIN_INSTRUCTION}",
                "reference": str(value),
                "chain": {"start": start, "ops": [[s, o] for _, s, o in ops]},
            }
        )
    return rows


def _wrong_step(
    rng: random.Random,
    value: int,
    symbol: str,
    operand: int,
    result_share: float = 0.5,
    ranges: NumberRanges = DIFFICULTIES["small"],
) -> tuple[int, int, int]:
    """A wrong step ``(a, b, c)`` for the right ``value op operand``: ``result_share`` of the
    time the right numbers with a result off by 1-3, else a right computation on a wrong
    number (the value carried or the operand, equally often), the mistake a small model makes
    copying an example."""
    result = apply_operation(value, symbol, operand)
    kind = rng.random()
    if kind < result_share:
        return value, operand, result + rng.choice((-3, -2, -1, 1, 2, 3))
    a, b = value, operand
    while (a, b) == (value, operand):
        if kind < (1 + result_share) / 2:
            a = value + rng.choice((-3, -2, -1, 1, 2, 3))
        else:
            b = rng.randint(*ranges.factor) if symbol == "*" else rng.randint(*ranges.operand)
    return a, b, apply_operation(a, symbol, b)


_SENTENCES = (
    "Let's work it out one operation per line.",
    "To solve this, start with the first number.",
    "7 + 5 = 12 is the example.",
    "The final answer is:",
    "First, we add the numbers.",
)


def _junk_line(rng: random.Random, right_step: str) -> str:
    """A line that is not the chain's next step (:data:`_SENTENCES`, a bare number, a run of
    ``#``, or the instruction's example ``7 + 5 = 12`` when that is not ``right_step``)."""
    kind = rng.randrange(4)
    if kind == 0 and right_step != "7 + 5 = 12":
        return "7 + 5 = 12"
    if kind == 1:
        return str(rng.randint(2, 40))
    if kind == 2:
        return "#" * rng.randint(2, 12)
    return rng.choice(_SENTENCES)


def _answer_line(rng: random.Random, value: int, good: bool) -> tuple[str, bool]:
    """The answer line after the steps: the last result (a third of the time when every step
    was right, that result off by 1-3 instead), and whether it is right."""
    if good and rng.random() < 1 / 3:
        return f"#### {value + rng.choice((-3, -2, -1, 1, 2, 3))}", False
    return f"#### {value}", good


def synthetic_step_rows(
    n: int,
    seed: int = 0,
    length: int = 3,
    error_rate: float = 0.6,
    *,
    answer_step: bool = False,
    junk_rate: float = 0.0,
    phrasings: tuple[str, ...] = ("symbol",),
    wrong_result_share: float = 0.5,
    difficulty: str = "small",
) -> list[dict[str, Any]]:
    """``n`` PRM rows ``{"prompt", "steps", "labels"}``: worked chains, ``error_rate`` of them
    with one wrong step at a random position (:func:`_wrong_step`: a wrong result, in
    ``wrong_result_share`` of them, or a right computation on a wrong number); the later
    steps carry on from its result. ``answer_step``: the answer line is the last step
    (:func:`_answer_line`); ``junk_rate``: that fraction of rows gets one :func:`_junk_line`
    at a random position, labelled bad with all after it; ``phrasings``: each step is written
    in one of these :data:`PHRASINGS`, drawn uniformly (from a generator of its own: the
    numbers and labels do not depend on it); ``difficulty``: the :data:`DIFFICULTIES` the
    numbers are drawn from."""
    problem = phrasing_problem(phrasings)
    if problem is not None:
        raise ValueError(f"phrasings: {problem}")
    ranges = _ranges(difficulty)
    rng = _rng("chain-steps", seed, length, difficulty)
    phrase_rng = _rng("chain-phrasing", seed, length, difficulty)
    rows = []
    for _ in range(n):
        start, ops = _chain(rng, length, ranges)
        wrong_at = rng.randrange(length) if rng.random() < error_rate else -1
        value, steps, labels, good = start, [], [], True
        right_steps = []
        for k, (_, symbol, operand) in enumerate(ops):
            a, b, result = value, operand, apply_operation(value, symbol, operand)
            right_steps.append(f"{a} {symbol} {b} = {result}")
            if k == wrong_at:
                a, b, result = _wrong_step(rng, value, symbol, operand, wrong_result_share, ranges)
                good = False
            steps.append(PHRASINGS[phrase_rng.choice(phrasings)].write(a, symbol, b, result))
            labels.append("+" if good else "-")
            value = result
        if answer_step:
            line, good = _answer_line(rng, value, good)
            steps.append(line)
            labels.append("+" if good else "-")
        if junk_rate > 0 and rng.random() < junk_rate:
            at = rng.randrange(len(steps) + 1)
            steps.insert(at, _junk_line(rng, right_steps[at] if at < length else ""))
            labels[at:] = ["-"] * (len(labels) - at + 1)
        rows.append(
            {
                "prompt": f"{_question(start, ops)}\n{CHAIN_INSTRUCTION}",
                "steps": steps,
                "labels": labels,
            }
        )
    return rows


def step_correctness(text: str, chain: dict[str, Any]) -> list[bool]:
    """For each line of ``text`` that reads as a step ``a op b = c`` in one of the
    :data:`PHRASINGS`: whether it is the next operation of ``chain`` applied to the right value
    with the right result."""
    value, ops = int(chain["start"]), [(str(s), int(o)) for s, o in chain["ops"]]
    verdicts, k = [], 0
    for line in text.splitlines():
        step = read_step(line)
        if step is None:
            continue
        a, symbol, b, c = step
        right = k < len(ops) and (symbol, b) == ops[k] and a == value
        right = right and c == apply_operation(value, symbol, b)
        verdicts.append(right)
        if right:
            value = c
        k += 1
    return verdicts
