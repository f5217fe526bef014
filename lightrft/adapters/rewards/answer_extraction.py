"""Finding the final answer in a model response or a reference solution.

Extractors are plain functions ``text -> str | None`` registered by name; a math reward tries
the configured names in order and takes the first answer found. Nothing here evaluates text:
the result is a substring that :mod:`answer_equivalence` compares.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from lightrft.domain.registry import Registry

Extractor = Callable[[str], "str | None"]

ANSWER_EXTRACTORS: Registry[Extractor] = Registry("answer extractor")

DEFAULT_EXTRACTORS: tuple[str, ...] = ("gsm8k", "boxed", "last_number")

_NUMBER = (
    r"-?\\[dt]?frac\{\s*-?\d+\s*\}\{\s*-?\d+\s*\}"  # \frac{1}{2}
    r"|-?\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 1,234.5
    r"|-?\d+(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?"  # 12, 3.5, 3/4
    r"|-?\.\d+"  # .5
)
_NUMBER_RE = re.compile(rf"(?:{_NUMBER})(?:\s*\\?%)?")
_ANSWER_IS_RE = re.compile(
    r"(?:final answer|answer)\s*(?:is|:|=)\s*:?\s*(?P<answer>[^\n]{1,200})", re.IGNORECASE
)
_BOX_OPENERS = ("\\boxed{", "\\fbox{")


@ANSWER_EXTRACTORS.register("gsm8k")
def after_hashes(text: str) -> str | None:
    """GSM8K style: the rest of the line after the last ``####``."""
    position = text.rfind("####")
    if position < 0:
        return None
    answer = text[position + 4 :].split("\n", 1)[0].strip()
    return answer or None


@ANSWER_EXTRACTORS.register("boxed")
def last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``), braces balanced."""
    start = max(text.rfind(opener) for opener in _BOX_OPENERS)
    if start < 0:
        return None
    begin = text.index("{", start) + 1
    depth = 1
    for position in range(begin, len(text)):
        char = text[position]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                answer = text[begin:position].strip()
                return answer or None
    return None  # unbalanced: the answer was cut off


@ANSWER_EXTRACTORS.register("answer_is")
def answer_phrase(text: str) -> str | None:
    """What follows the last "answer is" / "final answer:" on its line (up to 200 chars)."""
    answer = None
    for match in _ANSWER_IS_RE.finditer(text):
        answer = match.group("answer")
    if answer is None:
        return None
    answer = answer.strip().rstrip(".").strip()
    return answer or None


@ANSWER_EXTRACTORS.register("last_number")
def last_number(text: str) -> str | None:
    """The last number: ``12``, ``-3.5``, ``1,234``, ``3/4``, ``\\frac{3}{4}``, ``50%``."""
    answer = None
    for match in _NUMBER_RE.finditer(text):
        answer = match.group(0)
    return answer


def extract_answer(text: str, extractors: Sequence[str]) -> str | None:
    """The first answer found by ``extractors`` (names of :data:`ANSWER_EXTRACTORS`), in order."""
    for name in extractors:
        answer = ANSWER_EXTRACTORS.get(name)(text)
        if answer is not None:
            return answer
    return None


def reference_answer(reference: str) -> str:
    """The answer part of a reference: after ``####`` (GSM8K), else the last ``\\boxed{}``
    (MATH solutions), else the whole stripped text."""
    answer = after_hashes(reference)
    if answer is None and any(opener in reference for opener in _BOX_OPENERS):
        answer = last_boxed(reference)
    return answer if answer is not None else reference.strip()
