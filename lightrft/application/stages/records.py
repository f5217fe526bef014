"""What the experience stages pass along: the collected rollout, the work record the
annotation stages fill in, and the finished :class:`ExperienceBatch`.

Shapes: B samples (prompts x n), R response tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor

from lightrft.application.batching import RolloutTensors, build_rollout_tensors
from lightrft.application.constraint_step import ConstraintState
from lightrft.application.reward_scoring import Scores
from lightrft.domain.advantages import AdvantageInputs
from lightrft.domain.rewards import RunningMoments
from lightrft.domain.types import Completion, Experience, PromptRecord


@dataclass(frozen=True)
class Rollout:
    """Completions of ``prompts`` (``Completion.prompt_index`` into it) with their scores."""

    prompts: list[PromptRecord]
    completions: list[Completion]
    scores: Scores


@dataclass(frozen=True)
class CollectedRollout:
    """What the collection produced: completions with their scores, the collection metrics
    and (ReMax) the greedy baseline rewards (B,)."""

    rollout: Rollout
    metrics: dict[str, float]
    baseline: Tensor | None = None


@dataclass(frozen=True)
class ExperienceBatch:
    """An experience plus what the cycle logs about it."""

    experience: Experience
    prompts: list[PromptRecord]
    completions: list[Completion]
    metrics: dict[str, float]
    reward_moments: RunningMoments
    generated_tokens: int
    kl: float | None = None  # mean KL(old policy || reference) over response tokens
    reward_by_source: dict[str, Tensor] = field(default_factory=dict)  # each (B,), unshaped
    constraints: ConstraintState = field(default_factory=ConstraintState)  # after this batch


@dataclass
class Annotation:
    """The work record of the annotation stages: each stage reads what earlier ones set
    and sets its own fields (None: not computed, the stage did not run or had no input).

    ``metrics`` collects the stages' metrics in stage order; ``batches`` are the row
    indices of each no-grad forward over every row, ``old_batches`` those of the old-policy
    forward (every row, or the trained rows only).
    """

    collected: CollectedRollout
    tensors: RolloutTensors
    group_index: Tensor  # (B,) long, the prompt of each sample
    kl_coef: float
    moments: RunningMoments
    constraints: ConstraintState
    rewards: Tensor | None = None  # (B,) shaped
    token_rewards: Tensor | None = None  # (B, R) per-turn credit
    step_rewards: Tensor | None = None  # (B, R) process rewards on the step ends
    step_mask: Tensor | None = None  # (B, R) bool, the step ends
    batches: list[Tensor] = field(default_factory=list)
    old_batches: list[Tensor] = field(default_factory=list)
    old: Tensor | None = None  # (B, R) old-policy log-probs at the loss's temperature
    entropy: Tensor | None = None  # (B, R)
    ref: Tensor | None = None  # (B, R) reference log-probs
    teacher: Tensor | None = None  # (K, B, R) each teacher's log-probs
    values: Tensor | None = None  # (B, R) critic values
    rollout_logprobs: Tensor | None = None  # (B, R) the engine's, as the loss weighs them
    kl: Tensor | None = None  # (B, R) KL(old || reference) per token
    advantages: Tensor | None = None  # (B, R)
    returns: Tensor | None = None  # (B, R)
    metrics: dict[str, float] = field(default_factory=dict)

    @classmethod
    def begin(
        cls,
        collected: CollectedRollout,
        pad_token_id: int,
        kl_coef: float,
        moments: RunningMoments,
        constraints: ConstraintState,
    ) -> Annotation:
        """The record of ``collected``: its padded tensors and the group of each sample."""
        rollout = collected.rollout
        tensors = build_rollout_tensors(rollout.prompts, rollout.completions, pad_token_id)
        group_index = torch.tensor([c.prompt_index for c in rollout.completions], dtype=torch.long)
        return cls(
            collected,
            tensors,
            group_index,
            kl_coef,
            moments,
            constraints,
            rollout_logprobs=tensors.rollout_logprobs,
        )

    @property
    def mask(self) -> Tensor:
        """(B, R) 1 on the trained response tokens."""
        return self.tensors.sequences.response_mask

    def advantage_inputs(self) -> AdvantageInputs:
        """The estimator's inputs known before any forward (rewards, baseline, credit)."""
        assert self.rewards is not None, "the shaping stage runs first"
        return AdvantageInputs(
            self.rewards,
            self.mask,
            self.group_index,
            baseline_rewards=self.collected.baseline,
            token_rewards=self.token_rewards,
            step_rewards=self.step_rewards,
            step_mask=self.step_mask,
            sampled_logprobs=self.rollout_logprobs,
        )


AnnotationStage = Callable[[Annotation], None]
"""One annotation stage: reads and sets fields of the work record."""
