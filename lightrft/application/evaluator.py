"""Evaluator: rewards (accuracy) of the current engine weights on held-out prompts."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from math import comb

import torch

from lightrft.application.agent_metrics import episode_metrics
from lightrft.application.phases import Phase, PhaseSwitcher
from lightrft.application.reward_scoring import Scores, score_completions
from lightrft.domain.ports import PromptSource, RewardSource, RolloutEngine
from lightrft.domain.reward_recipes import RecipeBook
from lightrft.domain.types import PromptRecord, SamplingParams


def pass_at_k(num_samples: int, num_correct: int, k: int) -> float:
    """Unbiased pass@k of one prompt: 1 - C(n - c, k) / C(n, k) (Chen et al. 2021, eq. 1)."""
    if not 0 < k <= num_samples:
        raise ValueError(f"k must be in [1, {num_samples}], got {k}")
    if num_samples - num_correct < k:
        return 1.0
    return 1.0 - comb(num_samples - num_correct, k) / comb(num_samples, k)


class Evaluator:
    """Generates for held-out prompts and reports reward mean, accuracy and pass@k.

    A sample counts as correct when its combined reward is at least ``correct_threshold``;
    with ``accuracy_sources``, when the weighted sum of those sources' scores is (so a
    learned reward added to a verifiable one, e.g. a PRM's verdict beside ``math``, does not
    make a wrong answer count as right).
    """

    def __init__(
        self,
        engine: RolloutEngine,
        reward_sources: Sequence[RewardSource],
        weights: dict[str, float] | None = None,
        correct_threshold: float = 1.0,
        batch_size: int = 64,
        recipes: RecipeBook | None = None,
        accuracy_sources: Sequence[str] | None = None,
    ) -> None:
        self.engine, self.reward_sources = engine, list(reward_sources)
        self.weights = dict(weights or {})
        names = {source.name for source in self.reward_sources}
        unknown = sorted(set(accuracy_sources or ()) - names)
        if unknown:
            raise ValueError(
                f"eval.accuracy_sources names unknown reward sources {unknown}; "
                f"sources: {sorted(names)}"
            )
        self.accuracy_sources = tuple(accuracy_sources) if accuracy_sources else None
        self.recipes = recipes
        self.correct_threshold, self.batch_size = correct_threshold, batch_size

    def evaluate(
        self,
        prompts: PromptSource,
        sampling: SamplingParams,
        max_prompts: int | None = None,
        phases: PhaseSwitcher | None = None,
    ) -> dict[str, float]:
        """Metrics ``eval/...`` over the first ``max_prompts`` prompts (all by default)."""
        count = len(prompts) if max_prompts is None else min(max_prompts, len(prompts))
        if count == 0:
            raise ValueError("no evaluation prompts")
        totals: list[torch.Tensor] = []
        judged: list[torch.Tensor] = []  # what decides correctness (totals by default)
        lengths: list[int] = []
        source_metrics: list[tuple[dict[str, float], int]] = []
        for start in range(0, count, self.batch_size):
            batch: list[PromptRecord] = [
                prompts[i] for i in range(start, min(count, start + self.batch_size))
            ]
            with _phase(phases, Phase.EVAL):
                # one row per sample; an engine may append more trained rows after them (the
                # rollout gateway: the earlier rows of an episode whose agent rewrote history)
                completions = self.engine.generate(batch, sampling)[: len(batch) * sampling.n]
            with _phase(phases, Phase.EVAL_REWARD):
                scores = score_completions(
                    self.reward_sources, batch, completions, self.weights, recipes=self.recipes
                )
            totals.append(scores.total.view(len(batch), sampling.n))
            judged.append(self._judged(scores).view(len(batch), sampling.n))
            lengths.extend(len(c.token_ids) for c in completions)
            source_metrics.append((scores.metrics | episode_metrics(completions), len(completions)))
        rewards = torch.cat(totals)  # [prompts, n]
        correct = torch.cat(judged) >= self.correct_threshold
        metrics = {
            "eval/reward_mean": float(rewards.mean()),
            "eval/accuracy": float(correct.float().mean()),
            "eval/response_length": sum(lengths) / len(lengths),
            "eval/prompts": float(count),
        }
        for k in sorted({1, sampling.n}):
            per_prompt = [pass_at_k(sampling.n, int(c), k) for c in correct.sum(dim=1)]
            metrics[f"eval/pass@{k}"] = sum(per_prompt) / len(per_prompt)
        for key, value in sample_weighted_means(source_metrics).items():
            if not key.startswith("time/"):  # the eval phases are timed as a whole
                metrics[f"eval/{key}"] = value
        return metrics

    def _judged(self, scores: Scores) -> torch.Tensor:
        """Each sample's reward that decides correctness: the combined one, or the weighted
        sum of ``accuracy_sources``' scores."""
        if self.accuracy_sources is None:
            return scores.total
        return sum(
            (self.weights.get(n, 1.0) * scores.by_source[n].float() for n in self.accuracy_sources),
            torch.zeros_like(scores.total, dtype=torch.float32),
        )


def sample_weighted_means(batches: Sequence[tuple[dict[str, float], int]]) -> dict[str, float]:
    """Per-key mean over samples of per-batch means: sum_b n_b m_b / sum_b n_b.

    ``batches`` holds (metrics of one batch, its number of samples n_b). A key missing from
    a batch is averaged over the batches that report it; a key with no sample is left out.
    """
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for batch_metrics, n in batches:
        for key, value in batch_metrics.items():
            totals[key] = totals.get(key, 0.0) + n * value
            counts[key] = counts.get(key, 0) + n
    return {key: totals[key] / counts[key] for key in totals if counts[key] > 0}


def _phase(phases: PhaseSwitcher | None, name: str) -> AbstractContextManager[None]:
    return nullcontext() if phases is None else phases.phase(name)
