"""Work records for the experience stages' tests: completions from the fake engine with
scores given by the test."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from lightrft.adapters.fakes import FakeRolloutEngine
from lightrft.adapters.fakes.task import synthetic_records
from lightrft.application.constraint_step import ConstraintState
from lightrft.application.reward_scoring import Scores
from lightrft.application.stages.records import Annotation, CollectedRollout, Rollout
from lightrft.domain.rewards import RunningMoments
from lightrft.domain.types import SamplingParams

N = 2  # samples per prompt


def rollout(scores: Sequence[float], *, n: int = N, temperature: float = 1.0) -> Rollout:
    """``len(scores) // n`` prompts with ``n`` fake-engine completions each (prompt-major),
    scored ``scores`` by one source ``rule``."""
    prompts = synthetic_records(len(scores) // n, seed=0)
    sampling = SamplingParams(n=n, temperature=temperature, max_new_tokens=4, seed=3)
    completions = FakeRolloutEngine(seed=1).generate(prompts, sampling)
    total = torch.tensor(scores, dtype=torch.float32)
    return Rollout(prompts, completions, Scores({"rule": total.clone()}, total, {}))


def work(
    scores: Sequence[float], *, kl_coef: float = 0.0, n: int = N, temperature: float = 1.0
) -> Annotation:
    """The work record of :func:`rollout`, its rewards the scores (no shaping)."""
    collected = CollectedRollout(rollout(scores, n=n, temperature=temperature), {})
    record = Annotation.begin(collected, 0, kl_coef, RunningMoments(), ConstraintState())
    record.rewards = collected.rollout.scores.total
    return record
