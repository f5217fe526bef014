"""The collection half of a step's experience: sample and score the step's prompts (refilled
by dynamic sampling when asked), then the greedy baseline when the estimator needs one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from lightrft.application.stages.generate import Generate
from lightrft.application.stages.greedy_baseline import GreedyBaseline
from lightrft.application.stages.records import CollectedRollout, Rollout
from lightrft.application.stages.score import Score
from lightrft.domain.types import PromptRecord, SamplingParams

Sampler = Callable[[list[PromptRecord], int], tuple[Rollout, dict[str, float]]]
"""Samples and scores prompts with a seed; returns the rollout and its metrics."""


class SampleAndScore:
    """One round: ``generate`` at ``sampling`` with the given seed, then ``score``."""

    def __init__(self, generate: Generate, score: Score, sampling: SamplingParams) -> None:
        self.generate, self.score, self.sampling = generate, score, sampling

    def __call__(self, prompts: list[PromptRecord], seed: int) -> Rollout:
        """The scored completions of ``prompts`` drawn with ``seed``."""
        completions = self.generate(prompts, replace(self.sampling, seed=seed))
        return Rollout(prompts, completions, self.score(prompts, completions))

    def once(self, prompts: list[PromptRecord], seed: int) -> tuple[Rollout, dict[str, float]]:
        """One round as a :data:`Sampler` (no metrics of its own)."""
        return self(prompts, seed), {}


class Collection:
    """``sample`` (one round or dynamic sampling) then, for ReMax, ``baseline``."""

    def __init__(self, sample: Sampler, baseline: GreedyBaseline | None) -> None:
        self.sample, self.baseline = sample, baseline

    def __call__(self, prompts: Sequence[PromptRecord], seed: int) -> CollectedRollout:
        """The collected rollout of ``prompts`` sampled with ``seed``."""
        rollout, metrics = self.sample(list(prompts), seed)
        baseline = self.baseline(rollout) if self.baseline is not None else None
        return CollectedRollout(rollout, metrics, baseline)
