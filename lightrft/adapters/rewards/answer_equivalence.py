"""Deciding whether an extracted answer equals the reference answer.

Two stages, neither of which evaluates the text as code:

1. Exact numbers. Both sides are normalized (LaTeX delimiters, ``\\text{}`` units, currency,
   thousands separators, unit words, ``%``) and read as ``fractions.Fraction`` values; when
   both sides are numbers the answer is decided here, exactly (``0.5 == 1/2 == \\frac{1}{2}``).
   A percentage may be read either way: ``50%`` matches ``50`` and ``0.5``.
Answers and references too costly to check (power towers, numbers of thousands of digits:
:mod:`~lightrft.adapters.rewards.answer_cost`) are incorrect without either stage.

2. Symbolic. Otherwise ``math-verify`` parses both sides (LaTeX through its ANTLR grammar,
   plain expressions only when they consist of digits and operators) and compares them with
   sympy. Its timeouts use ``signal.alarm`` and so work only in the main thread;
   ``timeout_seconds=None`` disables them (the caller must then bound the time itself, e.g.
   in a worker process: see :class:`~lightrft.adapters.rewards.math_answer.MathAnswerReward`).
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, Literal, NamedTuple

from lightrft.adapters.rewards.answer_cost import too_costly

Verdict = Literal["correct", "incorrect", "unparseable"]


class AnswerCheck(NamedTuple):
    """Outcome for one response; ``timed_out`` if math-verify hit a timeout on the way;
    ``too_costly`` if the answer or reference was refused unchecked (:mod:`answer_cost`)."""

    verdict: Verdict
    timed_out: bool = False
    too_costly: bool = False


_DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
_TEXT_RE = re.compile(r"\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}")
_SPACING_RE = re.compile(r"\\[,;:! ]|\\q?quad|~")
_LEFT_RIGHT_RE = re.compile(r"\\(?:left|right)(?=[()\[\]|.])")
_FRAC_RE = re.compile(r"^(-?)\\[dt]?frac\{\s*(-?[\d.]+)\s*\}\{\s*(-?[\d.]+)\s*\}$")
_DECIMAL_RE = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)$")
_THOUSANDS_RE = re.compile(r"(?<![\d.])(\d{1,3}(?:,\d{3})+)(?![\d,])")
_UNIT_SUFFIX_RE = re.compile(r"^(?P<number>[-+]?[\d.,/]+)\s*(?P<unit>[A-Za-z][A-Za-z .'/²³]*)$")
_PERCENT_RE = re.compile(r"\s*(?:\\%|%|percent)$")
_WORDS_IN_PARENS_RE = re.compile(r"(?<=\S)\s+\([A-Za-z][A-Za-z .]*\)\s*$")
_MATH_WORDS = frozenset({"e", "i", "pi", "sqrt", "x", "y", "z", "n", "k"})


def normalize_answer(text: str) -> str:
    """Strips presentation: markdown bold, a trailing "(words)", delimiters, ``\\text{...}``
    wrappers, spacing, a final period, ``\\left``/``\\right``, a leading "=" or "x =",
    currency signs, unicode minus."""
    answer = text.strip().replace("\u2212", "-").replace("\\!", "")
    answer = answer.rstrip(".").strip().strip("*").strip()  # "**18**." -> "18"
    answer = _WORDS_IN_PARENS_RE.sub("", answer)  # "18 (dollars)" -> "18"
    for _ in range(2):
        for opener, closer in _DELIMITERS:
            if len(answer) > len(opener) + len(closer) and answer.startswith(opener):
                if answer.endswith(closer):
                    answer = answer[len(opener) : -len(closer)].strip()
    answer = _TEXT_RE.sub(lambda m: " " + m.group(1).strip() + " ", answer)
    answer = _SPACING_RE.sub(" ", _LEFT_RIGHT_RE.sub("", answer))
    answer = answer.replace("\\$", "").replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    answer = re.sub(r"^[A-Za-z]\s*=\s*", "", answer)  # "x = 5" -> "5"
    answer = answer.lstrip("=").strip().rstrip(".").strip()
    answer = re.sub(r"^(-?)\s*[$€£¥]\s*", r"\1", answer)  # "$18", "-$5"
    return " ".join(answer.split())


def _fraction(text: str) -> Fraction | None:
    text = text.replace(" ", "")
    match = _FRAC_RE.match(text)
    if match:
        sign, numerator, denominator = match.groups()
        value = _fraction(numerator)
        divisor = _fraction(denominator)
        if value is None or divisor is None or divisor == 0:
            return None
        return -value / divisor if sign else value / divisor
    if "/" in text:
        numerator, _, denominator = text.partition("/")
        value, divisor = _fraction(numerator), _fraction(denominator)
        if value is None or divisor is None or divisor == 0 or "/" in denominator:
            return None
        return value / divisor
    if _DECIMAL_RE.match(text):
        return Fraction(text)
    return None


def numeric_values(text: str) -> frozenset[Fraction]:
    """The exact values a normalized answer may denote: one for a number, two for a
    percentage (``50%`` -> {50, 1/2}), none when it is not a plain number."""
    answer = _THOUSANDS_RE.sub(lambda m: m.group(1).replace(",", ""), normalize_answer(text))
    percent = _PERCENT_RE.search(answer)
    if percent:
        answer = answer[: percent.start()].strip()
    unit = _UNIT_SUFFIX_RE.match(answer)
    if unit and unit.group("unit").strip().lower() not in _MATH_WORDS:
        answer = unit.group("number")
    value = _fraction(answer)
    if value is None:
        return frozenset()
    return frozenset({value, value / 100}) if percent else frozenset({value})


def _mv_parse(text: str, timeout: int | None) -> tuple[list[Any], bool]:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse
    from math_verify.errors import TimeoutException

    wrapped = text if any(m in text for m in ("$", "\\(", "\\[", "\\boxed")) else f"${text}$"
    try:
        parsed = parse(
            wrapped,
            extraction_config=[LatexExtractionConfig(), ExprExtractionConfig()],
            parsing_timeout=timeout,  # None disables the alarm
            raise_on_error=True,
        )
        return list(parsed), False
    except TimeoutException:
        return [], True
    except Exception:  # malformed LaTeX and the like: nothing parsed
        return [], False


def _mv_equal(gold: list[Any], pred: list[Any], timeout: int | None) -> tuple[bool, bool]:
    from math_verify import verify
    from math_verify.errors import TimeoutException

    timed_out = False
    for g in gold:
        for p in pred:
            try:
                if verify(g, p, timeout_seconds=timeout, raise_on_error=True):
                    return True, timed_out
            except TimeoutException:
                timed_out = True
            except Exception:  # a comparison sympy cannot do: not equal
                continue
    return False, timed_out


def answers_match(answer: str, reference: str, timeout_seconds: int | None) -> AnswerCheck:
    """Whether ``answer`` (extracted from a response) equals ``reference`` (its answer part).

    Exact when both are plain numbers; math-verify otherwise (``timeout_seconds`` per parse
    and per comparison; ``None`` only outside the main thread, see the module docstring).
    Either side :func:`~lightrft.adapters.rewards.answer_cost.too_costly`: incorrect, at once.
    """
    if too_costly(answer) or too_costly(reference):
        return AnswerCheck("incorrect", too_costly=True)
    answer_values, reference_values = numeric_values(answer), numeric_values(reference)
    if answer_values and reference_values:
        verdict: Verdict = "correct" if answer_values & reference_values else "incorrect"
        return AnswerCheck(verdict)
    gold, gold_timeout = _mv_parse(normalize_answer(reference), timeout_seconds)
    pred, pred_timeout = _mv_parse(normalize_answer(answer), timeout_seconds)
    if not gold or not pred:
        same = normalize_answer(answer) == normalize_answer(reference)
        return AnswerCheck("correct" if same else "incorrect", gold_timeout or pred_timeout)
    equal, compare_timeout = _mv_equal(gold, pred, timeout_seconds)
    timed_out = gold_timeout or pred_timeout or compare_timeout
    return AnswerCheck("correct" if equal else "incorrect", timed_out)
