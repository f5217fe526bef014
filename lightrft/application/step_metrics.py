"""The metrics a cycle adds to each step: phase times and memory, speed, the rollout feed's
``async/*`` metrics, all averaged over the data-parallel ranks."""

from __future__ import annotations

import torch

from lightrft.application.phases import PhaseSwitcher
from lightrft.application.rollout_feed import RolloutFeed
from lightrft.application.stages.records import ExperienceBatch
from lightrft.domain.ports import Collective


class StepMetrics:
    """Completes a step's metrics. ``asynchronous``: batches may come from an older policy
    (``off_policy.mode`` other than ``sync``), so the feed's metrics are logged;
    ``dropped_on_resume`` is how many generated-ahead batches the last resume dropped
    (logged once, with the next step)."""

    def __init__(
        self,
        phases: PhaseSwitcher,
        feed: RolloutFeed,
        collective: Collective,
        *,
        asynchronous: bool,
    ) -> None:
        self.phases, self.feed, self.collective = phases, feed, collective
        self.asynchronous = asynchronous
        self.dropped_on_resume = 0

    def complete(
        self, metrics: dict[str, float], batch: ExperienceBatch, elapsed: float
    ) -> dict[str, float]:
        """``metrics`` plus the speed and async metrics, averaged over ranks (``elapsed``:
        the step's seconds)."""
        metrics.update(self.speed(batch, elapsed))
        metrics.update(self._async())
        return mean_over_ranks(metrics, self.collective)

    def speed(self, batch: ExperienceBatch, elapsed: float) -> dict[str, float]:
        """The phases' times and memory since the last step, the step's time and token
        throughputs (generated tokens over the rollout time, all tokens over the step's)."""
        metrics = self.phases.take_metrics()
        # split placement: the producer generated, not this process's rollout phase
        rollout_time = metrics.get("time/rollout_s") or batch.metrics.get(
            "async/producer_generate_s", 0.0
        )
        metrics["time/step_s"] = elapsed
        metrics["throughput/generated_tokens_per_s"] = (
            batch.generated_tokens / rollout_time if rollout_time > 0 else 0.0
        )
        total_tokens = int(batch.experience.sequences.attention_mask.sum())
        metrics["throughput/tokens_per_s"] = total_tokens / elapsed if elapsed > 0 else 0.0
        return metrics

    def _async(self) -> dict[str, float]:
        """The feed's ``async/*`` metrics (none in ``sync`` mode: its metrics stay as they were)."""
        if not self.asynchronous:
            return {}
        metrics = self.feed.step_metrics()
        metrics["async/dropped_on_resume"] = float(self.dropped_on_resume)
        self.dropped_on_resume = 0
        return metrics


def mean_over_ranks(metrics: dict[str, float], collective: Collective) -> dict[str, float]:
    """Every metric averaged over data-parallel ranks (all ranks log the same keys)."""
    if collective.world_size == 1:
        return metrics
    keys = sorted(metrics)
    values = torch.tensor([metrics[k] for k in keys], dtype=torch.float64)
    mean = collective.all_reduce_sum(values) / collective.world_size
    return dict(zip(keys, mean.tolist(), strict=True))
