"""The reward-failure policy: stop a run whose reward source keeps failing.

A reward source that fails on a sample (the user's function raised, timed out, returned NaN)
gives it a fallback score and counts it in its ``failures`` metric; scoring records the
fraction as ``reward/<source>/failure_rate``. Training on fallback scores teaches nothing, so
when a source's failure rate (averaged over data-parallel ranks) is at least ``threshold``
for ``patience`` consecutive steps, :class:`RewardFailureMonitor` raises
:class:`RewardSourceFailingError`; the cycle then saves a checkpoint of the state before
that step and stops (resuming re-runs the step, e.g. after the function is fixed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from lightrft.application.reward_failure_policy import RewardFailurePolicy as RewardFailurePolicy
from lightrft.domain.ports import Collective

FAILURES_METRIC = "failures"
"""The ``RewardResult.metrics`` key a source counts its failed samples under."""


def failure_rate_key(source: str) -> str:
    """The step metric holding ``source``'s failed fraction of the scored samples."""
    return f"reward/{source}/failure_rate"


class RewardSourceFailingError(RuntimeError):
    """A reward source failed on too many samples for too long; the message says which."""


class RewardFailureMonitor:
    """Tracks, per source, how many consecutive steps were at or over the threshold."""

    def __init__(
        self, policy: RewardFailurePolicy, sources: Sequence[str], collective: Collective
    ) -> None:
        self.policy = policy
        self.sources = sorted(sources)
        self.collective = collective
        self.streaks = dict.fromkeys(self.sources, 0)

    def observe(self, step: int, metrics: Mapping[str, float]) -> None:
        """Updates the streaks with one step's metrics; raises when a source is over.

        Every rank must call this at the same point of every step (it all-reduces).
        """
        if not self.policy.enabled or not self.sources:
            return
        rates = torch.tensor(
            [float(metrics.get(failure_rate_key(s), 0.0)) for s in self.sources],
            dtype=torch.float64,
        )
        if self.collective.world_size > 1:
            rates = self.collective.all_reduce_sum(rates) / self.collective.world_size
        failing = []
        for source, rate in zip(self.sources, rates.tolist(), strict=True):
            over = rate >= self.policy.threshold
            self.streaks[source] = self.streaks[source] + 1 if over else 0
            if self.streaks[source] >= self.policy.patience:
                failing.append(f"{source!r} ({rate:.0%} of step {step}'s samples)")
        if failing:
            p = self.policy
            raise RewardSourceFailingError(
                f"reward source {', '.join(failing)} failed on >= {p.threshold:.0%} of the "
                f"samples for {p.patience} consecutive steps, so training stopped rather than "
                "learn from fallback scores; see the reward.*.failed warnings in the log, fix "
                "the source, then resume with --resume (reward.failure_threshold and "
                "reward.failure_patience set the limit, reward.stop_on_failures=false "
                "disables it)"
            )
