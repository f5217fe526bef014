"""One response against one reference: extract the answer, then compare.

Imports neither torch nor math-verify at module level, so the worker process that runs
:func:`check_response` off the main thread starts fast.
"""

from __future__ import annotations

from collections.abc import Sequence

from lightrft.adapters.rewards.answer_equivalence import AnswerCheck, answers_match
from lightrft.adapters.rewards.answer_extraction import (
    DEFAULT_EXTRACTORS,
    extract_answer,
    reference_answer,
)


def check_response(
    response: str,
    reference: str,
    extractors: Sequence[str] = DEFAULT_EXTRACTORS,
    timeout_seconds: int | None = 5,
    max_answer_chars: int = 512,
) -> AnswerCheck:
    """(verdict, timed_out, too_costly) for one response.

    The answer is the first one ``extractors`` find in ``response``; one longer than
    ``max_answer_chars`` counts as unparseable (it is never handed to sympy). The reference's
    answer part is compared with it by :func:`answers_match`. Plain values in and out, so a
    worker process can run it.
    """
    answer = extract_answer(response, extractors)
    if answer is None or len(answer) > max_answer_chars:
        return AnswerCheck("unparseable")
    return answers_match(answer, reference_answer(reference), timeout_seconds)
