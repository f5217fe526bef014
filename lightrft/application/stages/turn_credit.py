"""The turn-credit stage (``algorithm.turn_credit``, multi-turn episodes): each token gets
the reward of its turn and the later ones (:func:`~lightrft.domain.turn_credit.turn_token_rewards`)."""

from __future__ import annotations

from lightrft.application.stages.records import Annotation
from lightrft.domain.turn_credit import turn_token_rewards


class TurnCredit:
    """Sets ``token_rewards`` (B, R) from the episodes' turn rewards and the shaped rewards."""

    def __call__(self, work: Annotation) -> None:
        """Spreads each episode's rewards over its turns' tokens."""
        assert work.rewards is not None, "the shaping stage runs first"
        episodes = [c.episode for c in work.collected.rollout.completions]
        work.token_rewards = turn_token_rewards(episodes, work.rewards, work.mask)
