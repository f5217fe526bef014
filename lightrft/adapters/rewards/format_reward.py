"""``FormatReward``: whether a response is a reasoning block followed by an answer.

B samples. Judged on ``completion.text`` only: the prompt (and its system prompt, which may
well show the tags) never counts. The default shape is

    <think> reasoning </think> answer

with exactly one reasoning block, nothing before it but whitespace, and a non-empty answer
after it that holds no further tags. Options: other tags; ``answer_pattern`` (a regex the
answer part must match in full, e.g. ``r"<answer>.+</answer>"``); ``think_opened_by_prompt``
for chat templates whose generation prompt already ends with ``<think>`` (the response then
starts inside the block); or ``pattern``, one regex for the whole response (full match,
DOTALL), which replaces all of the above.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import torch

from lightrft.adapters.reward_parts.source_bases import RuleSource
from lightrft.domain.types import RewardResult, RewardSample


def _think_answer_regex(
    think_open: str, think_close: str, answer_pattern: str | None, opened_by_prompt: bool
) -> re.Pattern[str]:
    o, c = re.escape(think_open), re.escape(think_close)
    no_tag = rf"(?:(?!{o}|{c}).)"  # one character that does not start a tag
    opening = "" if opened_by_prompt else rf"\s*{o}"
    # Greedy runs that cannot cross a tag keep matching linear in the response length.
    answer = rf"(?:{answer_pattern})\s*" if answer_pattern else rf"(?=\S){no_tag}*"
    return re.compile(rf"{opening}{no_tag}*{c}\s*{answer}", re.DOTALL)


class FormatReward(RuleSource):
    """``RewardSource`` giving ``matched_score`` to well-formed responses, else
    ``unmatched_score``. Metric: ``format_rate`` (fraction well-formed)."""

    def __init__(
        self,
        *,
        name: str = "format",
        think_open: str = "<think>",
        think_close: str = "</think>",
        answer_pattern: str | None = None,
        think_opened_by_prompt: bool = False,
        pattern: str | None = None,
        matched_score: float = 1.0,
        unmatched_score: float = 0.0,
    ) -> None:
        if not think_open or not think_close:
            raise ValueError("think_open and think_close must be non-empty")
        if not (math.isfinite(matched_score) and math.isfinite(unmatched_score)):
            raise ValueError("matched_score and unmatched_score must be finite")
        self._name = name
        if pattern is not None:
            self.regex = re.compile(pattern, re.DOTALL)
        else:
            self.regex = _think_answer_regex(
                think_open, think_close, answer_pattern, think_opened_by_prompt
            )
        self.matched_score = matched_score
        self.unmatched_score = unmatched_score

    def matches(self, response: str) -> bool:
        """Whether ``response`` (the completion text alone) has the required format."""
        return self.regex.fullmatch(response) is not None

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) float32 from each ``sample.completion.text``; the prompt is ignored."""
        matched = [self.matches(sample.completion.text) for sample in samples]
        scores = torch.tensor(
            [self.matched_score if ok else self.unmatched_score for ok in matched],
            dtype=torch.float32,
        )
        rate = sum(matched) / max(len(matched), 1)
        return RewardResult(scores=scores, metrics={"format_rate": torch.tensor(rate)})

    def close(self) -> None:
        """Nothing to release."""
