"""Which prompts a rank samples at each step, and with which seed.

The schedule (:mod:`data_schedule`) deals the prompt indices over ranks, shuffled by the
run's seed; with ``rollout.balance_ranks`` on several ranks the prompts are dealt so every
rank gets about the same cost (:mod:`~lightrft.domain.prompt_cost`: prompt tokens with media
placeholders expanded, plus ``rollout.balance_encoder_weight`` times the units the media
encoder runs over).
"""

from __future__ import annotations

from typing import Any

from lightrft.application.data_schedule import balanced_prompt_indices, prompt_indices
from lightrft.application.params import CycleParams, RolloutParams
from lightrft.domain.ports import Collective, PromptSource
from lightrft.domain.prompt_cost import prompt_cost
from lightrft.domain.types import PromptRecord

SEED_STRIDE = 1_000_003
"""The sampling seed of step s is the run's seed times this plus s."""


class StepPrompts:
    """This rank's prompts of each step from ``prompts``."""

    def __init__(
        self,
        prompts: PromptSource,
        collective: Collective,
        rollout: RolloutParams,
        cycle: CycleParams,
    ) -> None:
        self.prompts, self.collective = prompts, collective
        self.rollout, self.cycle = rollout, cycle

    def __call__(self, step: int) -> tuple[list[PromptRecord], dict[str, float]]:
        """This rank's prompts of ``step`` and the balance metrics of the schedule."""
        indices, balance = self._indices(step)
        return [self.prompts[i] for i in indices], balance

    def seed(self, step: int) -> int:
        """The sampling seed of the batch of ``step`` (the same on every rank: engines derive
        per-prompt streams from it, so a sample does not depend on which rank draws it)."""
        return self.cycle.seed * SEED_STRIDE + step

    def _indices(self, step: int) -> tuple[list[int], dict[str, float]]:
        """This rank's prompt indices at ``step`` (cost-balanced over ranks when asked)."""
        c = self.collective
        schedule: dict[str, Any] = {
            "per_rank": self.rollout.prompts_per_step,
            "rank": c.rank,
            "world_size": c.world_size,
            "num_prompts": len(self.prompts),
            "seed": self.cycle.seed,
            "shuffle": self.cycle.shuffle_prompts,
        }
        if not self.rollout.balance_ranks or c.world_size == 1:
            return prompt_indices(step, **schedule), {}
        return balanced_prompt_indices(step, **schedule, cost=self._cost)

    def _cost(self, index: int) -> int:
        """Prompt tokens (media placeholders expanded) plus the weighted encoder units."""
        prompt = self.prompts[index]
        weight = self.rollout.balance_encoder_weight
        return prompt_cost(len(prompt.prompt_token_ids), prompt.multimodal, weight)
