"""The last stage: the filled work record becomes the step's :class:`ExperienceBatch`, with
the rollout's metrics (rewards, lengths, truncation, episodes)."""

from __future__ import annotations

from torch import Tensor

from lightrft.application.agent_metrics import episode_metrics
from lightrft.application.stages.records import Annotation, ExperienceBatch, Rollout
from lightrft.domain.groups import alike_group_fraction, zero_group_fraction
from lightrft.domain.health_checks import ALIKE_GROUPS
from lightrft.domain.sampled_entropy import SAMPLED_NLL, sampled_nll
from lightrft.domain.types import Experience


def experience_batch(work: Annotation) -> ExperienceBatch:
    """The experience of ``work`` and its metrics: the collection's, the stages', then the
    rollout's."""
    assert work.rewards is not None and work.advantages is not None and work.returns is not None
    rollout, tensors = work.collected.rollout, work.tensors
    work.metrics["advantages/zero_groups_fraction"] = float(
        zero_group_fraction(work.advantages, work.mask, work.group_index)
    )
    alike = alike_group_fraction(rollout.scores.total, work.group_index)
    if alike is not None:
        work.metrics[ALIKE_GROUPS] = float(alike)
    experience = Experience(
        sequences=tensors.sequences,
        old_logprobs=work.old,
        advantages=work.advantages,
        returns=work.returns,
        rewards=work.rewards,
        group_index=work.group_index,
        ref_logprobs=work.ref,
        rollout_logprobs=work.rollout_logprobs,
        values=work.values,
    )
    metrics = dict(work.collected.metrics)
    metrics.update(work.metrics)
    metrics.update(rollout_metrics(rollout, tensors.response_lengths, work.rewards))
    return ExperienceBatch(
        experience,
        rollout.prompts,
        rollout.completions,
        metrics,
        work.moments,
        int(tensors.response_lengths.sum()),
        work.metrics.get("kl/mean"),
        dict(rollout.scores.by_source),
        work.constraints,
    )


def rollout_metrics(
    rollout: Rollout, response_lengths: Tensor, rewards: Tensor
) -> dict[str, float]:
    """The scores' metrics, reward and response-length statistics and the episodes'."""
    lengths = response_lengths.float()
    truncated = sum(c.finish_reason == "length" for c in rollout.completions)
    metrics = dict(rollout.scores.metrics)
    metrics.update(
        {
            "reward/mean": float(rollout.scores.total.mean()),
            "reward/std": float(rollout.scores.total.std()) if len(rewards) > 1 else 0.0,
            "reward/shaped_mean": float(rewards.mean()),
            "response_length/mean": float(lengths.mean()),
            "response_length/max": float(lengths.max()),
            "response_length/truncated_fraction": truncated / len(rollout.completions),
            "rollout/samples": float(len(rollout.completions)),
        }
    )
    metrics.update(episode_metrics(rollout.completions))
    nll = sampled_nll(rollout.completions)
    if nll is not None:
        metrics[SAMPLED_NLL] = nll
    return metrics
