"""``EnvironmentReward``: the reward a multi-turn episode earned from its environment.

B samples. A sample that is an episode (``completion.episode``, from the multi-turn rollout)
scores the sum of its turn rewards; a sample without an episode scores ``missing_score``
(0 by default: it never met an environment). Metrics: ``episode_reward_mean`` and
``without_episode`` (the fraction of samples that had none).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from lightrft.adapters.reward_parts.source_bases import RuleSource
from lightrft.domain.types import RewardResult, RewardSample


class EnvironmentReward(RuleSource):
    """``RewardSource`` reading each episode's environment reward."""

    def __init__(self, *, name: str = "environment", missing_score: float = 0.0) -> None:
        self._name = name
        self.missing_score = missing_score

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """The episodes' rewards (B,)."""
        episodes = [s.completion.episode for s in samples]
        scores = torch.tensor(
            [self.missing_score if e is None else e.reward for e in episodes],
            dtype=torch.float32,
        )
        missing = sum(e is None for e in episodes)
        return RewardResult(
            scores,
            {
                "episode_reward_mean": scores.mean() if len(samples) else torch.tensor(0.0),
                "without_episode": torch.tensor(missing / max(len(samples), 1)),
            },
        )

    def close(self) -> None:
        """Nothing to release."""
