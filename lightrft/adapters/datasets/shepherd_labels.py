"""Math-Shepherd's label text: the input text with the step tag after every step replaced by
that step's label token (``+`` / ``-``), read back into one token per step.

:func:`label_tokens` is the one reader of this layout. The two row readers use it:
:mod:`~lightrft.adapters.datasets.step_label_rows` (PRM training rows) reads
:func:`one_character` per tag and judges the marks after, and
:mod:`~lightrft.adapters.datasets.reward_sets.step_rows` (the ``process-reward`` data set)
reads :func:`one_of` its label tokens; each words the failures (:class:`LabelTextMismatch`)
as its own errors and checks what follows the last token.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Literal


class LabelTextMismatch(Exception):
    """The label text does not read as the input with tokens: at character ``at`` it differs
    from the input (``"differs"``) or holds no label token where a tag stood (``"no_token"``)."""

    def __init__(self, kind: Literal["differs", "no_token"], at: int) -> None:
        super().__init__(f"{kind} at character {at}")
        self.kind, self.at = kind, at


def first_difference(text: str, pos: int, expected: str) -> int | None:
    """The first character of ``text`` from ``pos`` that differs from ``expected`` (the end of
    ``text`` when it stops short), or None when ``text`` holds ``expected`` at ``pos``."""
    got = text[pos : pos + len(expected)]
    if got == expected:
        return None
    return pos + next(
        (i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), len(got)
    )


TokenReader = Callable[[str, int], "str | None"]
"""The label token that ``text`` holds at ``pos``, or None when it holds none."""


def one_of(tokens: Iterable[str]) -> TokenReader:
    """Reads the first of ``tokens`` that the text holds at the position."""
    choices = tuple(tokens)
    return lambda text, pos: next((t for t in choices if text.startswith(t, pos)), None)


def one_character(text: str, pos: int) -> str:
    """Reads the character at the position, whatever it is ("" past the end): the caller
    judges the tokens once the whole text has read as the input."""
    return text[pos : pos + 1]


def label_tokens(
    text: str, pieces: Sequence[str], read_token: TokenReader
) -> tuple[list[str], int]:
    """The token after each of ``pieces`` (the input's text before each tag, in order) in the
    label ``text``, read by ``read_token``, and the character where the text after the last
    token starts. :class:`LabelTextMismatch` at the first place that does not read so."""
    found, pos = [], 0
    for piece in pieces:
        at = first_difference(text, pos, piece)
        if at is not None:
            raise LabelTextMismatch("differs", at)
        pos += len(piece)
        token = read_token(text, pos)
        if token is None:
            raise LabelTextMismatch("no_token", pos)
        found.append(token)
        pos += len(token)
    return found, pos
