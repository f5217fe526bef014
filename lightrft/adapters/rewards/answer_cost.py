"""Answers too costly to check: refused before math-verify / sympy see them.

sympy evaluates numbers exactly, so a power tower (``10^{10^{10^{10}}}``), a huge power
(``9^{999999999}``) or factorial (``100000!``) makes it compute a number of billions of
digits: math-verify's timeout then costs seconds per sample, and a reference of thousands of
digits makes Python's int parser raise. :func:`too_costly` finds these cheaply, from the
text: a run of more than :data:`MAX_DIGIT_RUN` digits, more than :data:`MAX_CHARS`
characters, or a numeric power / factorial whose value would have more than
:data:`MAX_VALUE_DIGITS` digits (estimated with logarithms, never computed).
"""

from __future__ import annotations

import math
import re

MAX_CHARS = 4096
"""Characters of an answer or reference checked at all."""
MAX_DIGIT_RUN = 1000
"""Digits of one number written out (Python refuses to parse an int of over 4300)."""
MAX_VALUE_DIGITS = 100_000
"""Digits of the value of a numeric power tower or factorial (sympy computes it exactly)."""

_NUMBER = r"\d+(?:\.\d+)?"
_TOWER_RE = re.compile(rf"{_NUMBER}(?:\^{_NUMBER})+")
_FACTORIAL_RE = re.compile(rf"({_NUMBER}(?:\^{_NUMBER})*)!")
_DIGIT_RUN_RE = re.compile(rf"\d{{{MAX_DIGIT_RUN + 1},}}")
_IGNORED_RE = re.compile(r"[{}()\s]")


def too_costly(text: str) -> bool:
    """Whether checking ``text`` could take sympy unbounded time or memory (see the module
    docstring)."""
    if len(text) > MAX_CHARS or _DIGIT_RUN_RE.search(text):
        return True
    flat = _IGNORED_RE.sub("", text.replace("**", "^"))
    for tower in _TOWER_RE.finditer(flat):
        levels = [float(part) for part in tower.group().split("^")]
        if power_digits(levels) > MAX_VALUE_DIGITS:
            return True
    for factorial in _FACTORIAL_RE.finditer(flat):  # "(10^{10})!" reads as "10^10!"
        levels = [float(part) for part in factorial.group(1).split("^")]
        if len(levels) > 1 and power_digits(levels) > 7:
            return True  # n >= 10**7: n! has more than 6.5e7 digits
        n = levels[0] if len(levels) == 1 else 10.0 ** power_digits(levels)
        if n > 2 and math.lgamma(n + 1) / math.log(10) > MAX_VALUE_DIGITS:
            return True
    return False


def power_digits(levels: list[float]) -> float:
    """About how many decimal digits ``levels[0] ^ levels[1] ^ ...`` (right-associative)
    has; ``inf`` when even that count overflows a float."""
    exponent = levels[-1]
    digits = math.log10(exponent) if exponent > 1 else 1.0
    for base in reversed(levels[:-1]):
        if base <= 1 or exponent == 0:
            exponent, digits = (base if exponent else 1.0), 1.0  # 0^e, 1^e, 0.5^e: <= 1
            continue
        digits = exponent * math.log10(base)  # log10(base ** exponent); inf stays inf
        exponent = 10.0**digits if digits < 300 else math.inf
    return digits
