"""Stop a run whose environment keeps failing.

An episode whose environment raised, timed out or answered what cannot be used ends
``env_error`` or ``env_invalid`` (counted, the other episodes go on). A run whose
environment fails for most episodes trains on nothing, so when at least ``threshold`` of
the episodes of ``patience`` consecutive rollouts ended so, :class:`EnvironmentFailureMonitor`
raises :class:`EnvironmentFailingError` naming the environment. It is a
:class:`~lightrft.application.reward_failures.RewardSourceFailingError` (an environment is
where an agent run's rewards come from): the cycle saves a checkpoint of the state before
the step and stops, and the CLI prints the one-line message.

Each rank judges the rollouts of its own engine.
"""

from __future__ import annotations

from collections.abc import Sequence

from lightrft.application.reward_failures import RewardSourceFailingError
from lightrft.domain.trajectory import EndReason

FAILED_REASONS: frozenset[EndReason] = frozenset({"env_error", "env_invalid"})


class EnvironmentFailingError(RewardSourceFailingError):
    """An environment failed for too many episodes for too long; the message names it."""


class EnvironmentFailureMonitor:
    """Counts consecutive rollouts whose failed fraction is at least ``threshold``."""

    def __init__(self, environment: str, *, enabled: bool, threshold: float, patience: int) -> None:
        self.environment = environment
        self.enabled, self.threshold, self.patience = enabled, threshold, patience
        self.streak = 0

    def observe(self, reasons: Sequence[EndReason | None]) -> None:
        """Updates the streak with one rollout's end reasons; raises when it is too long."""
        if not self.enabled or not reasons:
            return
        rate = sum(r in FAILED_REASONS for r in reasons) / len(reasons)
        self.streak = self.streak + 1 if rate >= self.threshold else 0
        if self.streak >= self.patience:
            raise EnvironmentFailingError(
                f"{self.environment} failed for {rate:.0%} of the episodes (env_error or "
                f"env_invalid) in {self.patience} consecutive rollouts, so training stopped "
                "rather than learn from nothing; see the agent.env_error / agent.env_invalid "
                "warnings in the log, fix the environment, then resume with --resume "
                "(rollout.agent.env_failure_threshold and env_failure_patience set the "
                "limit, rollout.agent.stop_on_env_failures=false disables it)"
            )
