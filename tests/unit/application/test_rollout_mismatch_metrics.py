"""The experience maker logs the rollout/training mismatch when the engine's log-probs come
from another implementation (``RolloutParams.measure_mismatch``)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from lightrft.domain.policy_losses import PolicyLossParams
from lightrft.domain.rewards import RunningMoments
from lightrft.domain.rollout_correction import mismatch_metrics
from tests.helpers.fake_cycle import build_rig


def _make(measure: bool, temperature: float = 1.0):  # noqa: ANN202
    rig = build_rig("grpo", prompts_per_step=2, n=2)  # engine seed differs from the policy's
    maker = rig.cycle.maker
    sampling = replace(maker.rollout.sampling, temperature=temperature)
    maker.rollout = replace(maker.rollout, measure_mismatch=measure, sampling=sampling)
    prompts = [rig.cycle.components.prompts[i] for i in range(2)]
    with torch.no_grad():
        batch = maker.make(prompts, seed=3, kl_coef=0.0, moments=RunningMoments())
    return rig, batch


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_mismatch_metrics_are_those_of_trainer_vs_engine_logprobs(temperature: float) -> None:
    rig, batch = _make(measure=True, temperature=temperature)
    exp = batch.experience
    with torch.no_grad():  # the trainer at the temperature the engine sampled with
        trainer = rig.policy.forward(exp.sequences, temperature=temperature).logprobs
    expected = mismatch_metrics(trainer, exp.rollout_logprobs, exp.response_mask)
    for key, value in expected.items():
        assert batch.metrics[key] == pytest.approx(float(value), abs=1e-6), key
    assert batch.metrics["rollout/logp_diff_max"] > 0  # the engine holds other weights


def test_after_a_sync_the_fake_engine_and_trainer_agree_at_the_sampling_temperature() -> None:
    rig = build_rig("grpo", prompts_per_step=2, n=2)
    rig.engine.load_weights(rig.policy.weights_for_sync(rig.policy.module.named_parameters()))
    maker = rig.cycle.maker
    sampling = replace(maker.rollout.sampling, temperature=0.7)
    maker.rollout = replace(maker.rollout, measure_mismatch=True, sampling=sampling)
    prompts = [rig.cycle.components.prompts[i] for i in range(2)]
    with torch.no_grad():
        batch = maker.make(prompts, seed=3, kl_coef=0.0, moments=RunningMoments())
    assert batch.metrics["rollout/logp_diff_max"] < 1e-5  # same weights, same temperature


def test_no_trainer_forward_and_no_metrics_when_not_asked() -> None:
    _, batch = _make(measure=False)  # one epoch, one mini-batch: old log-probs not needed
    assert batch.experience.old_logprobs is None
    assert "rollout/kl_k3" not in batch.metrics and "rollout/logp_diff_mean" not in batch.metrics


def test_correction_compares_engine_and_trainer_at_the_sampling_temperature() -> None:
    # The loss weighs by exp(old - rollout) with old at temperature 1 and the engine's
    # log-probs at the sampling temperature 0.7. With the engine synced (same weights) the
    # weights must be 1: the experience maker shifts the engine's log-probs to
    # old - trainer_T + engine_T, which equals old here.
    rig = build_rig("grpo", prompts_per_step=2, n=2)
    rig.engine.load_weights(rig.policy.weights_for_sync(rig.policy.module.named_parameters()))
    maker = rig.cycle.maker
    maker.algorithm = replace(maker.algorithm, loss=PolicyLossParams(tis_cap=2.0))
    sampling = replace(maker.rollout.sampling, temperature=0.7)
    maker.rollout = replace(maker.rollout, sampling=sampling)
    prompts = [rig.cycle.components.prompts[i] for i in range(2)]
    with torch.no_grad():
        exp = maker.make(prompts, seed=3, kl_coef=0.0, moments=RunningMoments()).experience
    mask = exp.response_mask.bool()
    assert exp.old_logprobs is not None and exp.rollout_logprobs is not None
    torch.testing.assert_close(
        exp.rollout_logprobs[mask], exp.old_logprobs[mask], atol=1e-5, rtol=0
    )
