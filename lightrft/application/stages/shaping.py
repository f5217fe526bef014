"""The shaping stage: the scores' total becomes the trained reward (overlong penalty,
running normalization, clipping; :func:`~lightrft.application.reward_scoring.shape_rewards`)
and the running moments advance."""

from __future__ import annotations

from lightrft.application.params import RewardShapingParams
from lightrft.application.reward_scoring import shape_rewards
from lightrft.application.stages.records import Annotation
from lightrft.domain.ports import Collective


class ShapeRewards:
    """Sets ``rewards`` (B,) and ``moments`` (normalization statistics over every rank)."""

    def __init__(
        self, shaping: RewardShapingParams, max_new_tokens: int, collective: Collective
    ) -> None:
        self.shaping, self.max_new_tokens, self.collective = shaping, max_new_tokens, collective

    def __call__(self, work: Annotation) -> None:
        """Shapes the total scores of ``work``'s rollout."""
        work.rewards, work.moments = shape_rewards(
            work.collected.rollout.scores.total,
            work.tensors.response_lengths,
            self.shaping,
            self.max_new_tokens,
            work.moments,
            self.collective.all_reduce_sum,
        )
