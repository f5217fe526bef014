"""The update of one step, in the train phase: the logged samples' token traces under the
policy that sampled them, then the optimizer's epochs over the experience."""

from __future__ import annotations

from dataclasses import dataclass

from lightrft.application.phases import Phase, PhaseSwitcher
from lightrft.application.policy_optimizer import PolicyOptimizer, TrainResult
from lightrft.application.sample_rows import SampleLog, TokenTraces
from lightrft.application.stages.records import ExperienceBatch


@dataclass(frozen=True)
class PolicyUpdate:
    """What the update did, whether it changed the policy's weights and the traces taken
    before it."""

    result: TrainResult
    updated_policy: bool
    traces: TokenTraces | None


class UpdatePolicy:
    """Trains ``optimizer`` on a batch with the train phase's plan in force."""

    def __init__(self, phases: PhaseSwitcher, optimizer: PolicyOptimizer, samples: SampleLog):
        self.phases, self.optimizer, self.samples = phases, optimizer, samples

    def __call__(self, batch: ExperienceBatch, *, kl_coef: float, step: int) -> PolicyUpdate:
        """Traces (before the update), then the optimizer steps of ``batch``."""
        with self.phases.phase(Phase.TRAIN):
            traces = self.samples.traces(batch)  # the sampling policy, before the update
            result = self.optimizer.train(batch.experience, kl_coef=kl_coef, step=step)
        return PolicyUpdate(result, result.updated_policy, traces)
