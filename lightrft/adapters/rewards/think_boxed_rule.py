"""``ThinkBoxedRule``: the original LightRFT's ``gsm8k_rule`` / ``geo3k_rule`` reward.

B samples. A response scores ``(1 - format_weight) * accuracy + format_weight * format``
(the original's weights: 0.9 and 0.1):

- accuracy: 1 when the content of the response's last ``\\boxed{...}`` equals the reference
  (compared as :class:`~lightrft.adapters.rewards.math_answer.MathAnswerReward` does: exactly
  as numbers, else symbolically with math-verify), else 0 (also when there is no box);
- format: 1 when the response holds a ``<think>...</think>`` block and a ``\\boxed{...}``, the
  block (its first occurrence) ending before the first box starts, else 0.

So a correct, formatted answer scores 1.0, a correct one without the reasoning block 0.9, a
formatted wrong one 0.1, an unformatted wrong one 0. Both checks read the response only: the
original decoded the prompt with the response, so a system prompt quoting the tags counted
as formatted there.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import torch

from lightrft.adapters.reward_parts.source_bases import RuleSource
from lightrft.adapters.rewards.math_answer import MathAnswerReward
from lightrft.domain.types import RewardResult, RewardSample

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_BOXED = re.compile(r"\\boxed\{.*?\}", re.DOTALL)


def think_then_boxed(response: str) -> bool:
    """Whether ``response`` has a ``<think>...</think>`` block ending before its first box."""
    think, boxed = _THINK.search(response), _BOXED.search(response)
    return think is not None and boxed is not None and think.end() <= boxed.start()


class ThinkBoxedRule(RuleSource):
    """``RewardSource`` of the original's rule recipes (see the module docstring). Metrics:
    ``accuracy``, ``format_rate`` and the accuracy check's ``parse_failure_rate``,
    ``timeouts``, ``too_costly``."""

    def __init__(self, *, name: str = "gsm8k_rule", format_weight: float = 0.1) -> None:
        if not (math.isfinite(format_weight) and 0 <= format_weight <= 1):
            raise ValueError(f"format_weight must be in [0, 1], got {format_weight}")
        self._name = name
        self.format_weight = format_weight
        self.accuracy = MathAnswerReward(name=name, extractors=("boxed",))

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) float32; each sample needs a reference."""
        checked = self.accuracy.score(samples)
        formatted = torch.tensor(
            [think_then_boxed(s.completion.text) for s in samples], dtype=torch.float64
        )
        weight = self.format_weight
        scores = (1.0 - weight) * checked.scores.to(torch.float64) + weight * formatted
        metrics = dict(checked.metrics)
        metrics["format_rate"] = formatted.mean() if len(samples) else torch.tensor(0.0)
        return RewardResult(scores=scores.to(torch.float32), metrics=metrics)

    def close(self) -> None:
        """Stops the accuracy check's worker process, if one was started."""
        self.accuracy.close()
