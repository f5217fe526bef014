"""A built-in task where a tool is needed: multi-digit multiplication with a calculator.

``tool_problems(n, seed)`` gives rows ``{"prompt", "reference"}`` such as "What is 347 * 29?"
-> "10063" (a 3-digit times a 2-digit number: a 135M model almost never gets the product
right by itself); the held-out rows use another seed. ``tool_use_trace(row)`` is the chat a
tool-using assistant would have on it (for the SFT warm-up): the Hermes call, the
calculator's answer as a ``tool`` message, then ``The answer is N.``; ``direct_answer_trace(row)``
is the chat of a teacher that knows the product and answers at once. ``warm_up_traces(rows,
tool_fraction, seed)`` mixes the two: the demo's warm-up teaches both behaviours, and which
one pays off for the 135M student (the tool: it cannot multiply) is left for RL to find.
"""

from __future__ import annotations

import json
import random
from typing import Any

SYSTEM_PROMPT = (
    "You can use a calculator. To use it, reply with only "
    '<tool_call>{"name": "calculator", "arguments": {"expression": "..."}}</tool_call> '
    "and wait for its result. Then reply: The answer is N."
)


def tool_problems(n: int, seed: int) -> list[dict[str, str]]:
    """``n`` products of a 3-digit and a 2-digit number, deterministic in ``seed``."""
    rng = random.Random(f"tool-arithmetic-{seed}")
    rows = []
    for _ in range(n):
        a, b = rng.randint(100, 999), rng.randint(11, 99)
        rows.append({"prompt": f"What is {a} * {b}?", "reference": str(a * b)})
    return rows


def expression_of(prompt: str) -> str:
    """The arithmetic of a row's prompt ("What is 347 * 29?" -> "347 * 29")."""
    return prompt.removeprefix("What is ").removesuffix("?")


def tool_use_trace(row: dict[str, str]) -> dict[str, Any]:
    """The SFT chat of ``row``: system, user, the call, the tool's result, the answer."""
    call = {"name": "calculator", "arguments": {"expression": expression_of(row["prompt"])}}
    return {
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": row["prompt"]},
            {"role": "assistant", "content": f"<tool_call>{json.dumps(call)}</tool_call>"},
            {"role": "tool", "content": row["reference"]},
            {"role": "assistant", "content": f"The answer is {row['reference']}."},
        ]
    }


def direct_answer_trace(row: dict[str, str]) -> dict[str, Any]:
    """The SFT chat of ``row`` answered without the tool (a teacher that knows the product)."""
    return {
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": row["prompt"]},
            {"role": "assistant", "content": f"The answer is {row['reference']}."},
        ]
    }


def warm_up_traces(
    rows: list[dict[str, str]], tool_fraction: float, seed: int
) -> list[dict[str, Any]]:
    """One chat per row: ``round(tool_fraction * len(rows))`` of them (chosen by ``seed``)
    call the calculator, the others answer directly."""
    if not 0.0 <= tool_fraction <= 1.0:
        raise ValueError(f"tool_fraction must be in [0, 1], got {tool_fraction}")
    with_tool = set(
        random.Random(f"warm-up-{seed}").sample(range(len(rows)), round(tool_fraction * len(rows)))
    )
    return [
        tool_use_trace(row) if i in with_tool else direct_answer_trace(row)
        for i, row in enumerate(rows)
    ]
