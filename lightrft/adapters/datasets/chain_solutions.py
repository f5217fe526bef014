"""Worked solutions of the built-in chains (:mod:`~lightrft.adapters.datasets.synthetic_steps`)
and the exact step labels of any response to one.

:func:`worked_solution` writes a chain's solution the way the instruction asks (``7 + 5 = 12``,
``12 * 3 = 36``, ``#### 36``); :func:`worked_chain_rows` gives prompt/completion rows of them
for ``lightrft sft`` (a policy's warm-up on the format). :func:`line_labels` labels each line of
a response in the Math-Shepherd sense (arXiv:2312.08935): good while every line up to it is
right. Its checker is exact, where Math-Shepherd estimates a step's worth by rolling out from
it: a step line (any of :data:`~lightrft.adapters.datasets.synthetic_steps.PHRASINGS`) is right
when it applies the chain's next operation to the value carried so far with the right result;
an answer line ``#### N`` is right when every operation has been worked and N is the value; a
blank line changes nothing; any other line is wrong.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from lightrft.adapters.datasets.synthetic_steps import apply_operation, chain_problems, read_step

_ANSWER = re.compile(r"^\s*####\s*(-?\d+)\s*$")


def _operations(chain: dict[str, Any]) -> tuple[int, list[tuple[str, int]]]:
    return int(chain["start"]), [(str(s), int(o)) for s, o in chain["ops"]]


def worked_solution(chain: dict[str, Any]) -> str:
    """One line ``a op b = c`` per operation, then ``#### result``."""
    value, ops = _operations(chain)
    lines = []
    for symbol, operand in ops:
        result = apply_operation(value, symbol, operand)
        lines.append(f"{value} {symbol} {operand} = {result}")
        value = result
    return "\n".join([*lines, f"#### {value}"])


def worked_chain_rows(
    n: int, seed: int = 0, max_length: int = 3, difficulty: str = "small"
) -> list[dict[str, Any]]:
    """``n`` SFT rows ``{"prompt", "completion"}``: chains of 1 to ``max_length`` operations
    (each length equally often, drawn from a generator of its own) with their worked
    solutions; the prompts are those of :func:`chain_problems` of that length."""
    if max_length < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    lengths = random.Random(f"worked-{seed}-{max_length}-{difficulty}")
    drawn = [lengths.randint(1, max_length) for _ in range(n)]
    pools = {
        length: iter(chain_problems(drawn.count(length), seed, length, difficulty))
        for length in set(drawn)
    }
    rows = []
    for length in drawn:
        problem = next(pools[length])
        rows.append({"prompt": problem["prompt"], "completion": worked_solution(problem["chain"])})
    return rows


def line_labels(lines: Sequence[str], chain: dict[str, Any]) -> list[bool]:
    """For each of ``lines`` (a response cut at its step separator): whether it and every
    line before it are right (module docstring)."""
    value, ops = _operations(chain)
    worked, good, labels = 0, True, []
    for line in lines:
        if not line.strip():
            labels.append(good)
            continue
        step, answer = read_step(line), _ANSWER.match(line)
        if step is not None:
            a, symbol, b, c = step
            right = worked < len(ops) and (symbol, b) == ops[worked] and a == value
            right = right and c == apply_operation(value, symbol, b)
            worked += 1
            value = c if right else value
        else:
            right = answer is not None and worked == len(ops) and int(answer[1]) == value
        good = good and right
        labels.append(good)
    return labels
