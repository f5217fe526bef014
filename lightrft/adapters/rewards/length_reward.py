"""``LengthReward``: DAPO's soft overlong punishment as a reward source.

B samples. The length of a response is its number of generated tokens
(``len(completion.token_ids)``); the score is
:func:`lightrft.domain.rewards.overlong_penalty` of it: 0 up to ``max_length - cache_length``,
falling linearly to ``-factor`` at ``max_length``, ``-factor`` beyond.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from lightrft.adapters.reward_parts.source_bases import RuleSource
from lightrft.domain.rewards import overlong_penalty
from lightrft.domain.types import RewardResult, RewardSample


class LengthReward(RuleSource):
    """``RewardSource`` of the overlong penalty. Metrics: ``overlong_rate`` (fraction with a
    penalty), ``truncated_rate`` (fraction the engine cut at its budget), ``mean_length``."""

    def __init__(
        self, *, max_length: int, cache_length: int, factor: float = 1.0, name: str = "overlong"
    ) -> None:
        # Validates the parameters once, up front, with the domain function's own checks.
        overlong_penalty(torch.zeros(1), max_length, cache_length, factor)
        self._name = name
        self.max_length = max_length
        self.cache_length = cache_length
        self.factor = factor

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) float32: the overlong penalty of each response's token count."""
        lengths = torch.tensor([len(s.completion.token_ids) for s in samples], dtype=torch.float32)
        scores = overlong_penalty(lengths, self.max_length, self.cache_length, self.factor)
        count = max(len(samples), 1)
        truncated = sum(s.completion.finish_reason == "length" for s in samples)
        metrics = {
            "overlong_rate": (scores < 0).float().sum() / count,
            "truncated_rate": torch.tensor(truncated / count),
            "mean_length": lengths.sum() / count,
        }
        return RewardResult(scores=scores.to(torch.float32), metrics=metrics)

    def close(self) -> None:
        """Nothing to release."""
