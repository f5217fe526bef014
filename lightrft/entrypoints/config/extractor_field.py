"""The ``extractors`` option shared by the sections that read a final answer (the math
and TTRL rewards, the tool environment's grader)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from lightrft.adapters.rewards.answer_extraction import ANSWER_EXTRACTORS, DEFAULT_EXTRACTORS


def _known_extractors(names: list[str]) -> list[str]:
    if not names:
        raise ValueError("needs at least one extractor")
    for name in names:
        ANSWER_EXTRACTORS.get(name)  # names the valid choices when unknown
    return names


ExtractorNames = Annotated[list[str], AfterValidator(_known_extractors)]


def extractors_field() -> list[str]:
    """The field: the default extractors, documented once."""
    default: list[str] = Field(
        default_factory=lambda: list(DEFAULT_EXTRACTORS),
        description="Answer extractors tried in order; the first answer found is checked "
        "(gsm8k '#### x', boxed, answer_is 'the answer is x', last_number).",
    )
    return default
