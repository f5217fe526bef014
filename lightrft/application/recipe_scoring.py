"""Scoring by recipe: each sample by the reward sources of its prompt's label only.

A :class:`~lightrft.domain.reward_recipes.RecipeBook` routes every sample (by its prompt's
label) to a recipe; each source then scores, in one call, the samples of all the recipes
that use it (a source shared by several recipes is asked once), concurrently where it
allows (:mod:`.source_scoring`). A sample's reward is its recipe's weighted sum, gated by
its recipe's gates. Per-source scores are kept as (B,) tensors holding 0 for samples the
source did not score. Shapes: B samples.

Metrics: each source's own (``reward/<source>/mean`` over the samples it scored, ...);
per recipe ``reward/recipe/<label>/mean`` (mean reward of its samples) and
``reward/recipe/<label>/share`` (its fraction of the samples); the default recipe (no label)
is ``reward/recipe/default/...``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from lightrft.application.source_scoring import SourceConcurrency, score_each, source_scores
from lightrft.domain.ports import RewardSource
from lightrft.domain.reward_recipes import RecipeBook, label_of
from lightrft.domain.rewards import gate_rewards, weighted_reward_sum
from lightrft.domain.types import RewardSample


def score_by_recipe(
    sources: Sequence[RewardSource],
    samples: Sequence[RewardSample],
    book: RecipeBook,
    gate_value: float = 0.0,
    concurrency: SourceConcurrency | None = None,
) -> tuple[dict[str, Tensor], Tensor, dict[str, float]]:
    """Per-source scores (each (B,)), the rewards (B,) and the metrics (module docstring).

    ``sources`` must hold every source the book names; an unknown label raises
    :class:`~lightrft.domain.reward_recipes.UnknownLabelError` under ``unknown_label=error``.
    """
    by_name = {source.name: source for source in sources}
    missing = sorted(book.sources() - set(by_name))
    if missing:
        raise ValueError(f"reward recipes name sources {missing}; built: {sorted(by_name)}")
    routes = _routes(samples, book)
    rows_of: dict[str, list[int]] = {}
    for i, route in enumerate(routes):
        rows_of.setdefault(route, []).append(i)
    uses = {
        name: [i for i, r in enumerate(routes) if name in book.recipe(r).weights]
        for name in by_name
    }
    jobs = [(by_name[name], rows) for name, rows in uses.items() if rows]
    scored = score_each([(s, [samples[i] for i in rows]) for s, rows in jobs], concurrency)
    count = len(samples)
    by_source = {name: torch.zeros(count, dtype=torch.float32) for name in by_name}
    metrics: dict[str, float] = {}
    for (source, rows), (result, seconds) in zip(jobs, scored, strict=True):
        scores, source_metrics = source_scores(source.name, result, seconds, len(rows))
        by_source[source.name][torch.tensor(rows)] = scores
        metrics.update(source_metrics)
    total = torch.zeros(count, dtype=torch.float32)
    passed = torch.ones(count, dtype=torch.bool)
    gated = False
    for route, rows in rows_of.items():
        recipe, index = book.recipe(route), torch.tensor(rows)
        part = {name: by_source[name][index] for name in recipe.weights}
        reward = weighted_reward_sum(part, recipe.weights)
        if recipe.gates:
            reward, passed[index] = gate_rewards(reward, part, recipe.gates, gate_value)
            gated = True
        total[index] = reward
        metrics[f"reward/recipe/{route}/mean"] = float(reward.mean())
        metrics[f"reward/recipe/{route}/share"] = len(rows) / count
    if gated:
        metrics["reward/gate_pass_rate"] = float(passed.float().mean())
    return by_source, total, metrics


def _routes(samples: Sequence[RewardSample], book: RecipeBook) -> list[str]:
    """The recipe of each sample (worked out once per prompt)."""
    of_prompt: dict[int, str] = {}
    routes = []
    for sample in samples:
        prompt = sample.prompt
        if id(prompt) not in of_prompt:
            where = prompt.metadata.get("where")
            name = f"prompt {prompt.uid!r}" + (f" ({where})" if where else "")
            of_prompt[id(prompt)] = book.route(label_of(prompt.metadata), name)
        routes.append(of_prompt[id(prompt)])
    return routes
