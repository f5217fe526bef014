"""The calculator parses arithmetic itself (ast whitelist, bounded sizes), never evaluates
model text."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightrft.adapters.agents.calculator import MAX_DIGITS, CalculatorTool, evaluate
from lightrft.domain.agent import Tool, ToolError


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("1234 * 5678", "7006652"),
        ("(2 + 3) * -4", "-20"),
        ("7 / 2", "3.5"),
        ("8 / 2", "4"),
        ("7 // 2", "3"),
        ("-7 % 3", "2"),
        ("2 ** 10", "1024"),
        ("2 ** -2", "0.25"),
        ("1 / 3", "0.333333333333"),
        ("0.1 + 0.2", "0.3"),  # exact decimal arithmetic
        ("123456789 * 987654321", "121932631112635269"),
    ],
)
def test_values(expression: str, result: str) -> None:
    assert CalculatorTool().call({"expression": expression}) == result


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("__import__('os').system('echo hi')", "unsupported syntax"),
        ("x + 1", "unsupported syntax"),
        ("'a' * 3", "unsupported syntax"),
        ("(1).real", "unsupported syntax"),
        ("[1, 2]", "unsupported syntax"),
        ("True + 1", "unsupported syntax"),
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("0 ** -1", "division by zero"),
        ("2 ** 0.5", "integer exponents"),
        ("9 ** 9 ** 9", "digits"),
        ("10 ** 101", "digits"),
        ("1 +", "not an arithmetic expression"),
        ("1" * 300, "longer than"),
        ("+".join(["1"] * 40), "more than"),
    ],
)
def test_refusals_are_tool_errors(expression: str, reason: str) -> None:
    start = time.monotonic()
    with pytest.raises(ToolError, match=reason):
        evaluate(expression)
    assert time.monotonic() - start < 5.0


def test_arguments_are_checked_and_the_tool_meets_its_port() -> None:
    tool = CalculatorTool()
    assert isinstance(tool, Tool) and tool.spec.name == "calculator"
    for bad in ({}, {"expression": 3}, {"expression": "1", "x": 1}):
        with pytest.raises(ToolError, match="one string argument"):
            tool.call(bad)


@settings(max_examples=80, deadline=None)
@given(
    st.integers(-(10**12), 10**12),
    st.integers(-(10**12), 10**12),
    st.sampled_from(["+", "-", "*", "//", "%"]),
)
def test_integer_arithmetic_is_exact(a: int, b: int, op: str) -> None:
    if op in ("//", "%") and b == 0:
        return
    operations = {
        "+": lambda: a + b,
        "-": lambda: a - b,
        "*": lambda: a * b,
        "//": lambda: a // b,
        "%": lambda: a % b,
    }
    expected = operations[op]()
    assert evaluate(f"({a}) {op} ({b})") == Fraction(expected)
    assert len(str(abs(expected))) <= MAX_DIGITS
