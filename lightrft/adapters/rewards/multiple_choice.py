"""``MultipleChoiceGrader``: the letter a response chose (GPQA-style questions) against the
reference letter.

The chosen letter is, in order of precedence: the last ``\\boxed{X}`` (``\\boxed{\\text{X}}``,
``\\boxed{(X)}``), else the last "answer is X" / "Answer: X" / "answer: (X)" (bold marks
allowed; the letter in capitals), else a response that is a letter alone ("C", "(C).",
"**C**"). ``X`` must be one of the question's letters; anything else is no answer. Letters
compare upper-cased.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from lightrft.domain.eval_metrics import GradedAnswer

_OPEN, _CLOSE = r"[\s(\[*]*", r"[\s)\].*]*"
_BOXED = re.compile(r"\\boxed\{\s*(?:\\text(?:bf)?\{)?\s*\(?\s*([A-Za-z])\s*\)?\s*\}?\s*\}")
_STATED = re.compile(  # the letter in capitals: "the answer is a ..." chose nothing
    r"(?i:answer)(?:\s+(?i:is)|\s*:|\s+(?i:would\s+be))?\s*[:\-]?" + _OPEN + r"([A-Z])(?![A-Za-z])"
)
_ALONE = re.compile(r"^" + _OPEN + r"([A-Za-z])" + _CLOSE + r"$")


class MultipleChoiceGrader:
    """Grades the chosen letter among ``letters`` (e.g. ``"ABCD"``)."""

    def __init__(self, letters: Iterable[str]) -> None:
        self.letters = frozenset(letter.strip().upper() for letter in letters)
        if not self.letters or any(len(letter) != 1 for letter in self.letters):
            raise ValueError(f"choice letters must be single letters, got {sorted(self.letters)}")

    def choice(self, response: str) -> str | None:
        """The letter ``response`` chose, or None."""
        for pattern in (_BOXED, _STATED):
            found = [str(m).upper() for m in pattern.findall(response)]
            found = [letter for letter in found if letter in self.letters]
            if found:
                return found[-1]
        alone = _ALONE.match(response.strip())
        if alone and alone.group(1).upper() in self.letters:
            return alone.group(1).upper()
        return None

    def grade(self, response: str, reference: str | None) -> GradedAnswer:
        """The chosen letter (the answer's key) and, with a reference, whether it is it."""
        chosen = self.choice(response)
        if reference is None:
            return GradedAnswer(chosen, None)
        return GradedAnswer(chosen, chosen is not None and chosen == reference.strip().upper())
