"""The experience maker logs the rollout/training mismatch when the engine's log-probs come
from another implementation (``RolloutParams.measure_mismatch``)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from lightrft.domain.rewards import RunningMoments
from lightrft.domain.rollout_correction import mismatch_metrics
from tests.helpers.fake_cycle import build_rig


def _make(measure: bool):  # noqa: ANN202
    rig = build_rig("grpo", prompts_per_step=2, n=2)  # engine seed differs from the policy's
    maker = rig.cycle.maker
    maker.rollout = replace(maker.rollout, measure_mismatch=measure)
    prompts = [rig.cycle.components.prompts[i] for i in range(2)]
    with torch.no_grad():
        batch = maker.make(prompts, seed=3, kl_coef=0.0, moments=RunningMoments())
    return rig, batch


def test_mismatch_metrics_are_those_of_trainer_vs_engine_logprobs() -> None:
    rig, batch = _make(measure=True)
    exp = batch.experience
    with torch.no_grad():
        trainer = rig.policy.forward(exp.sequences).logprobs
    expected = mismatch_metrics(trainer, exp.rollout_logprobs, exp.response_mask)
    for key, value in expected.items():
        assert batch.metrics[key] == pytest.approx(float(value), abs=1e-6), key
    assert batch.metrics["rollout/logp_diff_max"] > 0  # the engine holds other weights


def test_no_trainer_forward_and_no_metrics_when_not_asked() -> None:
    _, batch = _make(measure=False)  # one epoch, one mini-batch: old log-probs not needed
    assert batch.experience.old_logprobs is None
    assert "rollout/kl_k3" not in batch.metrics and "rollout/logp_diff_mean" not in batch.metrics
