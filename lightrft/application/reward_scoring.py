"""Scoring completions with every reward source and shaping the result (ALGORITHMS.md step 1).

Shapes: B samples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from lightrft.application.params import RewardShapingParams
from lightrft.application.recipe_scoring import score_by_recipe
from lightrft.application.source_scoring import (
    SourceConcurrency,
    score_sources,
    source_scores,
)
from lightrft.domain.ports import RewardSource
from lightrft.domain.reduce import AllReduceSum
from lightrft.domain.reward_recipes import RecipeBook
from lightrft.domain.rewards import (
    RunningMoments,
    clip_values,
    gate_rewards,
    normalize_rewards,
    overlong_penalty,
    weighted_reward_sum,
)
from lightrft.domain.types import Completion, PromptRecord, RewardSample


@dataclass(frozen=True)
class Scores:
    """Per-source scores (each (B,)) and their weighted sum (B,), before shaping."""

    by_source: dict[str, Tensor]
    total: Tensor
    metrics: dict[str, float]
    # per source giving process rewards: per sample, (response token, score) of each step end
    steps: dict[str, list[tuple[tuple[int, float], ...]]] = field(default_factory=dict)


def score_completions(
    sources: Sequence[RewardSource],
    prompts: Sequence[PromptRecord],
    completions: Sequence[Completion],
    weights: dict[str, float],
    gates: Mapping[str, float] | None = None,
    gate_value: float = 0.0,
    concurrency: SourceConcurrency | None = None,
    recipes: RecipeBook | None = None,
) -> Scores:
    """Asks every source for scores of ``completions`` and combines them with ``weights``;
    samples failing a gate (a source's score below its threshold in ``gates``) get
    ``gate_value``. Metrics per source: mean score, ``seconds`` and the source's own. A source
    that cannot score at all (:class:`RewardSourceUnavailableError`) is a failing source:
    :class:`RewardSourceFailingError` (the cycle checkpoints the state before the step).
    Sources that allow it are scored concurrently (``concurrency``, :mod:`.source_scoring`);
    the results keep the sources' order. With ``recipes`` (:mod:`.recipe_scoring`), each
    sample is scored by the sources of its label's recipe only, with that recipe's weights
    and gates (``weights`` and ``gates`` are then the book's default recipe's)."""
    samples = [RewardSample(prompts[c.prompt_index], c) for c in completions]
    if recipes is not None:
        return Scores(*score_by_recipe(sources, samples, recipes, gate_value, concurrency))
    by_source: dict[str, Tensor] = {}
    metrics: dict[str, float] = {}
    steps: dict[str, list[tuple[tuple[int, float], ...]]] = {}
    scored = score_sources(sources, samples, concurrency)
    for source, (result, seconds) in zip(sources, scored, strict=True):
        scores, source_metrics = source_scores(source.name, result, seconds, len(samples))
        by_source[source.name] = scores
        metrics.update(source_metrics)
        if result.step_rewards is not None:
            steps[source.name] = list(result.step_rewards)
    unknown = sorted(set(weights) - set(by_source))
    if unknown:
        raise ValueError(
            f"reward weights name unknown sources {unknown}; sources: {sorted(by_source)}"
        )
    full_weights = {name: weights.get(name, 1.0) for name in by_source}
    total = weighted_reward_sum(by_source, full_weights)
    if gates:
        total, passed = gate_rewards(total, by_source, gates, gate_value)
        metrics["reward/gate_pass_rate"] = float(passed.float().mean()) if len(passed) else 0.0
    return Scores(by_source, total, metrics, steps)


def score_truncated_as(scores: Scores, completions: Sequence[Completion], value: float) -> Scores:
    """``scores`` with the total of every completion cut off at the length limit
    (``finish_reason == "length"``) replaced by ``value``; the per-source scores stay as
    scored. Metric ``reward/truncated_replaced``: the fraction replaced."""
    truncated = torch.tensor([c.finish_reason == "length" for c in completions], dtype=torch.bool)
    total = torch.where(truncated, torch.full_like(scores.total, value), scores.total)
    metrics = dict(scores.metrics)
    metrics["reward/truncated_replaced"] = float(truncated.float().mean()) if completions else 0.0
    return Scores(scores.by_source, total, metrics, scores.steps)


def shape_rewards(
    total: Tensor,
    response_lengths: Tensor,
    params: RewardShapingParams,
    max_new_tokens: int,
    moments: RunningMoments,
    all_reduce_sum: AllReduceSum,
) -> tuple[Tensor, RunningMoments]:
    """Overlong penalty, running normalization, clipping, in that order.

    Shape: total (B,), response_lengths (B,) -> (B,). Returns the updated moments.
    """
    rewards = total
    if params.overlong_buffer is not None:
        rewards = rewards + overlong_penalty(
            response_lengths, max_new_tokens, params.overlong_buffer, params.overlong_factor
        )
    if params.normalize:
        moments = moments.update(rewards, all_reduce_sum)
        rewards = normalize_rewards(rewards, moments, params.normalize_subtract_mean)
    if params.reward_clip is not None:
        rewards = clip_values(rewards, params.reward_clip)
    return rewards, moments
