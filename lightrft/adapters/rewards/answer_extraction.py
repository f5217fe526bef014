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

DEFAULT_EXTRACTORS: tuple[str, ...] = ("gsm8k", "boxed", "answer_is", "last_number")
"""The order a math reward tries: a ``####`` line, a box, a stated answer, the last number."""

_NUMBER = (
    r"-?\\[dt]?frac\{\s*-?\d+\s*\}\{\s*-?\d+\s*\}"  # \frac{1}{2}
    r"|-?\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 1,234.5
    r"|-?\d+(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?"  # 12, 3.5, 3/4
    r"|-?\.\d+"  # .5
)
_NUMBER_RE = re.compile(rf"(?:{_NUMBER})(?:\s*\\?%)?")
_ANSWER_IS_RE = re.compile(
    r"\banswer\s*(?:is|:|=)\s*:?[ \t]*(?=(?P<answer>[^\n]{1,200}))", re.IGNORECASE
)  # the phrase is a lookahead, so a later "answer is" on the same line is found too
# A phrase that starts with a number (optionally in $...$, **...** or \(...\)) followed by
# the end, punctuation or a word, not by an operator: "5. I checked", "42, since", "15 apples".
_LEADING_NUMBER_RE = re.compile(
    rf"(?:\\?\$|\*\*|\\\()?(?P<number>(?:{_NUMBER})(?:\s*\\?%)?)"
    r"(?=\s*$|\$|\*\*|\\\)|[.;:!?)](?!\d)|,(?!\s*\d)|\s+[A-Za-z])"
)
# Where the stated answer ends: a sentence end (a period before a space or the end), a
# semicolon, or a comma before a word ("x = 5, so ...").
_ANSWER_END_RE = re.compile(r"\.(?=\s|$)|;|,\s+(?=[A-Za-z]{2})")
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
    """The answer stated after the last "answer is" / "answer:" / "final answer is".

    Only the answer itself, not the rest of its line: a leading number (``5`` in "The
    answer is 5. I checked it with 2 and 3."), else the text up to the end of the sentence
    (``x = 5`` in "the answer is x = 5, so x + 1 = 6"). Looks at most 200 characters ahead.
    """
    phrase = None
    for match in _ANSWER_IS_RE.finditer(text):
        phrase = match.group("answer")
    if phrase is None:
        return None
    number = _LEADING_NUMBER_RE.match(phrase)
    if number is not None:
        return number.group("number")
    answer = _ANSWER_END_RE.split(phrase, maxsplit=1)[0].strip()
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
