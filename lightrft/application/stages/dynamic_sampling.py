"""The dynamic sampling stage (DAPO): sample rounds until enough prompts have an
informative group (scores not all alike), keep those groups, and on several ranks keep as
many groups on every rank."""

from __future__ import annotations

from dataclasses import replace

import structlog
import torch

from lightrft.application.reward_scoring import Scores
from lightrft.application.stages.collection import SampleAndScore
from lightrft.application.stages.records import Rollout
from lightrft.domain.ports import Collective
from lightrft.domain.sampling import DynamicSamplingState, informative_group_mask
from lightrft.domain.types import Completion, PromptRecord

log = structlog.get_logger(__name__)

ROUND_SEED_STRIDE = 7919
"""Round r samples with the step's seed + r times this."""


class DynamicSampling:
    """Refills with ``sample`` rounds up to ``max_rounds`` (a :data:`Sampler`)."""

    def __init__(self, sample: SampleAndScore, max_rounds: int, collective: Collective) -> None:
        self.sample, self.max_rounds, self.collective = sample, max_rounds, collective

    def __call__(self, prompts: list[PromptRecord], seed: int) -> tuple[Rollout, dict[str, float]]:
        """The kept groups (the last round's when none was informative) and the
        ``dynamic_sampling/*`` metrics."""
        state = DynamicSamplingState(target_groups=len(prompts), max_rounds=self.max_rounds)
        kept: list[Rollout] = []
        last: Rollout | None = None
        while not state.done:
            last = self.sample(prompts, seed + ROUND_SEED_STRIDE * state.rounds)
            group = torch.tensor([c.prompt_index for c in last.completions])
            informative = informative_group_mask(last.scores.total, group)
            kept_prompts = sorted({int(g) for g in group[informative]})
            kept_prompts = kept_prompts[: state.target_groups - state.kept_groups]
            if kept_prompts:
                kept.append(select_groups(last, kept_prompts))
            state = state.after_round(len(kept_prompts))
        metrics = {
            "dynamic_sampling/rounds": float(state.rounds),
            "dynamic_sampling/kept_groups": float(state.kept_groups),
            "dynamic_sampling/hit_round_limit": float(state.hit_round_limit),
        }
        if state.hit_round_limit:
            log.warning(
                "dynamic_sampling.round_limit",
                rounds=state.rounds,
                kept_groups=state.kept_groups,
                target_groups=state.target_groups,
            )
        if not kept:
            assert last is not None
            rollout = last  # every group uninformative: advantages are 0, train on it
        else:
            rollout = concat(kept)
        rollout, trimmed = self._same_group_count_on_every_rank(rollout)
        metrics["dynamic_sampling/trimmed_groups"] = float(trimmed)
        return rollout, metrics

    def _same_group_count_on_every_rank(self, rollout: Rollout) -> tuple[Rollout, int]:
        """Keeps the first k groups, k the fewest any rank kept; returns it and the drop count.

        Each rank keeps a different number of groups; sharded strategies (FSDP, ZeRO) need
        every rank to run the same number of forwards and micro-batches, or their
        collectives wait forever.
        """
        c = self.collective
        if c.world_size == 1:
            return rollout, 0
        counts = torch.zeros(c.world_size, dtype=torch.float64)
        counts[c.rank] = len(rollout.prompts)
        fewest = int(c.all_reduce_sum(counts).min())
        dropped = len(rollout.prompts) - fewest
        if dropped == 0:
            return rollout, 0
        return select_groups(rollout, list(range(fewest))), dropped


def select_groups(rollout: Rollout, prompt_indices: list[int]) -> Rollout:
    """The completions of the given prompts only, re-indexed to the kept prompt list."""
    position = {old: new for new, old in enumerate(prompt_indices)}
    rows = [i for i, c in enumerate(rollout.completions) if c.prompt_index in position]
    completions = [
        replace(rollout.completions[i], prompt_index=position[rollout.completions[i].prompt_index])
        for i in rows
    ]
    index = torch.tensor(rows)
    scores = Scores(
        {k: v[index] for k, v in rollout.scores.by_source.items()},
        rollout.scores.total[index],
        rollout.scores.metrics,
        {k: [v[i] for i in rows] for k, v in rollout.scores.steps.items()},
    )
    return Rollout([rollout.prompts[i] for i in prompt_indices], completions, scores)


def concat(parts: list[Rollout]) -> Rollout:
    """One rollout from several rounds; prompt indices shifted so groups stay distinct."""
    prompts: list[PromptRecord] = []
    completions: list[Completion] = []
    for part in parts:
        offset = len(prompts)
        prompts.extend(part.prompts)
        completions.extend(
            replace(c, prompt_index=c.prompt_index + offset) for c in part.completions
        )
    by_source = {
        k: torch.cat([p.scores.by_source[k] for p in parts]) for k in parts[0].scores.by_source
    }
    total = torch.cat([p.scores.total for p in parts])
    steps = {k: [s for p in parts for s in p.scores.steps[k]] for k in parts[0].scores.steps}
    return Rollout(prompts, completions, Scores(by_source, total, parts[-1].scores.metrics, steps))
