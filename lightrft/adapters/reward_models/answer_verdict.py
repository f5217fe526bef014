"""The original LightRFT's pairwise verdict: ``<answer>Video 1 is better</answer>`` (or
``Image 2 is better`` ...), the last ``<answer>`` block of the judgement (an unclosed one at
the end counts, as in the original). ``N is better`` names the N-th response, i.e. the N-th
label (``A``: response 1); any other answer is unparsable (None)."""

from __future__ import annotations

import re
from collections.abc import Mapping

_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.DOTALL)
_BETTER = re.compile(r"^(?:image|video|response|audio)\s+([12])\s+is\s+better\.?$", re.IGNORECASE)


class AnswerVerdict:
    """Reads ``<answer>X N is better</answer>`` as the score of the N-th of ``labels``."""

    def __init__(self, labels: Mapping[str, float]) -> None:
        self._scores = list(labels.values())

    def parse(self, text: str) -> float | None:
        answers = _ANSWER.findall(text)
        if not answers:
            return None
        found = _BETTER.match(answers[-1].strip())
        if found is None:
            return None
        index = int(found.group(1)) - 1
        return self._scores[index] if index < len(self._scores) else None
