"""``CalculatorTool``: exact arithmetic on an expression the model wrote, never ``eval``.

The expression is parsed with :mod:`ast` and only numbers, ``+ - * / // % **``, unary
signs and parentheses are accepted; anything else (names, calls, attributes, strings) is a
:class:`~lightrft.domain.agent.ToolError` the model sees. Sizes are bounded before any work:
at most ``MAX_CHARS`` characters and ``MAX_NODES`` syntax nodes, integers of at most
``MAX_DIGITS`` digits (a power whose result would be longer is refused before it is
computed). Integer arithmetic is exact; ``/`` gives an integer when it divides evenly,
otherwise a decimal rounded to 12 significant digits.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from lightrft.adapters.agents.arguments import only_string_argument
from lightrft.domain.agent import ToolError, ToolSpec

MAX_CHARS = 256
MAX_NODES = 64
MAX_DIGITS = 100

SPEC = ToolSpec.one_string(
    "calculator",
    "Evaluates an arithmetic expression exactly (+, -, *, /, //, %, **, parentheses).",
    "expression",
    "e.g. 1234 * 5678",
)


def _digits(value: Fraction) -> int:
    """Decimal digits of the larger of numerator and denominator."""
    return max(len(str(abs(value.numerator))), len(str(value.denominator)))


def _checked(value: Fraction) -> Fraction:
    if _digits(value) > MAX_DIGITS:
        raise ToolError(f"result has more than {MAX_DIGITS} digits")
    return value


def _power(base: Fraction, exponent: Fraction) -> Fraction:
    if exponent.denominator != 1:
        raise ToolError("only integer exponents are supported")
    e = exponent.numerator
    if base == 0 and e < 0:
        raise ToolError("division by zero")
    size = max(math.log10(abs(base.numerator) or 1), math.log10(base.denominator))
    if abs(e) * size > MAX_DIGITS + 1:  # digits of the result, estimated before computing it
        raise ToolError(f"result has more than {MAX_DIGITS} digits")
    return _checked(base**e)


def _evaluate(node: ast.AST) -> Fraction:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        if isinstance(node.value, float) and not math.isfinite(node.value):
            raise ToolError("numbers must be finite")
        return _checked(Fraction(str(node.value)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left), _evaluate(node.right)
        op = node.op
        if isinstance(op, ast.Pow):
            return _power(left, right)
        if isinstance(op, ast.Add):
            return _checked(left + right)
        if isinstance(op, ast.Sub):
            return _checked(left - right)
        if isinstance(op, ast.Mult):
            return _checked(left * right)
        if isinstance(op, ast.Div | ast.FloorDiv | ast.Mod):
            if right == 0:
                raise ToolError("division by zero")
            if isinstance(op, ast.Div):
                return _checked(left / right)
            return _checked(
                Fraction(left // right) if isinstance(op, ast.FloorDiv) else left % right
            )
    raise ToolError(f"unsupported syntax: {type(node).__name__}")


def evaluate(expression: str) -> Fraction:
    """The exact value of ``expression`` (see the module docstring); raises ToolError."""
    if len(expression) > MAX_CHARS:
        raise ToolError(f"expression longer than {MAX_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as error:
        raise ToolError(f"not an arithmetic expression ({error.msg})") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ToolError(f"expression has more than {MAX_NODES} parts")
    return _evaluate(tree)


def format_number(value: Fraction) -> str:
    """An integer as is; any other value as a decimal of 12 significant digits."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.12g}"


class CalculatorTool:
    """The ``Tool`` port: ``{"expression": "..."}`` -> the value as text."""

    @property
    def spec(self) -> ToolSpec:
        """Name ``calculator``, one string parameter ``expression``."""
        return SPEC

    def call(self, arguments: Mapping[str, Any]) -> str:
        """The value of ``arguments["expression"]``; ToolError for anything else."""
        return format_number(evaluate(only_string_argument(arguments, "expression", "calculator")))
