"""The score stage: every reward source judges the completions (in the reward phase), the
weighted total with gates, and, when asked, truncated completions scored as a fixed value."""

from __future__ import annotations

from collections.abc import Sequence

from lightrft.application.params import RewardShapingParams
from lightrft.application.phases import Phase, PhaseSwitcher
from lightrft.application.reward_scoring import Scores, score_completions, score_truncated_as
from lightrft.domain.ports import RewardSource
from lightrft.domain.types import Completion, PromptRecord


class Score:
    """Scores completions with ``sources`` under ``shaping``'s weights, gates, concurrency
    and ``truncated_reward``."""

    def __init__(
        self,
        sources: Sequence[RewardSource],
        shaping: RewardShapingParams,
        phases: PhaseSwitcher,
    ) -> None:
        if not sources:
            raise ValueError("reward_sources is empty; need at least one reward source")
        self.sources, self.shaping, self.phases = list(sources), shaping, phases

    def __call__(
        self, prompts: Sequence[PromptRecord], completions: Sequence[Completion]
    ) -> Scores:
        """The scores (B,) of ``completions`` (each answering ``prompts[c.prompt_index]``)."""
        with self.phases.phase(Phase.REWARD):
            s = self.shaping
            scores = score_completions(
                self.sources,
                prompts,
                completions,
                dict(s.weights),
                s.gates,
                s.gate_value,
                s.concurrency,
                s.recipes,
            )
            if s.truncated_reward is None:
                return scores
            return score_truncated_as(scores, completions, s.truncated_reward)
