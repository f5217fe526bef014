"""``MathAnswerGrader``: the ``AnswerGrader`` port on the math answer extraction and check.

The key of an answer groups equivalent answers for majority voting without pairwise
symbolic comparisons: a plain number (after normalization, see :mod:`answer_equivalence`)
is keyed by its exact value (``"1/2"``, ``"0.5"`` and ``"\\frac{1}{2}"`` share the key
``"num:1/2"``; a percentage by its face value, ``"50%"`` -> ``"num:50"``); anything else by
its normalized text with spaces removed (``"text:x^2+1"``). Correctness is decided by
:func:`~lightrft.adapters.rewards.answer_check.check_response` (exact numbers, then
math-verify), in this process; off the main thread math-verify runs without its timeouts.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from lightrft.adapters.rewards.answer_check import check_response
from lightrft.adapters.rewards.answer_equivalence import normalize_answer, numeric_values
from lightrft.adapters.rewards.answer_extraction import (
    ANSWER_EXTRACTORS,
    DEFAULT_EXTRACTORS,
    extract_answer,
)
from lightrft.domain.eval_metrics import GradedAnswer


def answer_key(answer: str) -> str:
    """The voting key of an extracted answer (see the module docstring)."""
    values = numeric_values(answer)
    if values:
        return f"num:{max(values, key=abs)}"
    return "text:" + "".join(normalize_answer(answer).split())


class MathAnswerGrader:
    """Grades responses with the answer extractors ``extractors`` (tried in order)."""

    def __init__(
        self,
        extractors: Sequence[str] = DEFAULT_EXTRACTORS,
        *,
        timeout_seconds: int | None = 5,
        max_answer_chars: int = 512,
    ) -> None:
        for name in extractors:
            ANSWER_EXTRACTORS.get(name)
        self.extractors = tuple(extractors)
        self.timeout_seconds, self.max_answer_chars = timeout_seconds, max_answer_chars

    def grade(self, response: str, reference: str | None) -> GradedAnswer:
        """Key of the response's answer and, with a reference, whether it is correct."""
        answer = extract_answer(response, self.extractors)
        if answer is None or len(answer) > self.max_answer_chars:
            return GradedAnswer(None, None if reference is None else False)
        if reference is None:
            return GradedAnswer(answer_key(answer), None)
        # math-verify's timeouts use signal.alarm: main thread only
        in_main = threading.current_thread() is threading.main_thread()
        timeout = self.timeout_seconds if in_main else None
        check = check_response(response, reference, self.extractors, timeout, self.max_answer_chars)
        return GradedAnswer(answer_key(answer), check.verdict == "correct")
