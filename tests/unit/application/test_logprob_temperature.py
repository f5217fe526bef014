"""The trainer's log-probs at the sampling temperature (``AlgorithmParams.logprob_temperature``):
the loss differentiates the distribution the engine drew the tokens from, the old policy's
log-probs are taken at that temperature, and the rollout correction then needs no second
forward (docs/algorithms.md, "The loss's temperature")."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from torch import Tensor

from lightrft.application.params import AlgorithmParams, TrainParams
from lightrft.domain.policy_losses import PolicyLossInputs, PolicyLossParams, compute_policy_loss
from lightrft.domain.rewards import RunningMoments
from lightrft.domain.types import Experience
from tests.helpers.fake_cycle import FakeRig, build_rig
from tests.unit.application.test_old_logprobs_trained_rows import _half_the_groups_vary, _train

TEMPERATURE = 0.7
OFF_POLICY = AlgorithmParams(
    advantage_estimator="grpo", policy_loss="ppo", loss=PolicyLossParams(tis_cap=2.0)
)


def _rig(logprob_temperature: float, *, synced: bool = True) -> FakeRig:
    """The engine holds the policy's weights when ``synced``, else other ones (a stale
    behaviour policy)."""
    algorithm = replace(OFF_POLICY, logprob_temperature=logprob_temperature)
    rig = build_rig(algorithm, prompts_per_step=8, n=4, mini_batch_size=32, seed=2)
    maker = rig.cycle.maker
    sampling = replace(maker.rollout.sampling, temperature=TEMPERATURE)
    maker.rollout = replace(maker.rollout, sampling=sampling)
    maker.skip_zero_advantage_rows = False
    rig.rule.score = _half_the_groups_vary  # type: ignore[method-assign]
    if synced:
        weights = [(n, p.detach()) for n, p in rig.policy.module.named_parameters()]
        rig.cycle.components.engine.load_weights(weights)
    return rig


def _experience(rig: FakeRig) -> tuple[Experience, int]:
    """The experience and the rows the policy forwarded to make it."""
    prompts = [rig.cycle.components.prompts[i] for i in range(8)]
    before = rig.policy.forward_rows
    batch = rig.cycle.maker.make(prompts, seed=11, kl_coef=0.0, moments=RunningMoments())
    return batch.experience, rig.policy.forward_rows - before


def _gradient(rig: FakeRig, experience: Experience, temperature: float) -> Tensor:
    """The flat gradient of one optimizer step over the whole batch."""
    algorithm = replace(OFF_POLICY, logprob_temperature=temperature)
    grads = _train(rig, experience, algorithm, TrainParams(mini_batch_size=32, micro_batch_size=32))
    assert len(grads) == 1
    return grads[0]


def test_old_logprobs_are_taken_at_the_sampling_temperature_in_one_forward() -> None:
    rig = _rig(TEMPERATURE)
    exp, rows = _experience(rig)
    assert exp.old_logprobs is not None and exp.rollout_logprobs is not None
    mask = exp.response_mask.bool()
    with torch.no_grad():
        at_t = rig.policy.forward(exp.sequences, temperature=TEMPERATURE).logprobs
        at_1 = rig.policy.forward(exp.sequences).logprobs
    torch.testing.assert_close(exp.old_logprobs[mask], at_t[mask], atol=1e-6, rtol=0)
    assert float((at_t - at_1)[mask].abs().max()) > 1e-2  # the temperature matters here
    # the correction compares like with like without a second forward: one pass of the batch
    assert rows == len(exp)
    # the engine sampled with these very weights: its log-probs are the old ones, so the
    # correction weighs every token by 1
    torch.testing.assert_close(exp.rollout_logprobs[mask], at_t[mask], atol=1e-5, rtol=0)


def test_at_temperature_one_the_correction_still_compares_at_the_sampling_temperature() -> None:
    rig = _rig(1.0)
    exp, rows = _experience(rig)
    assert exp.old_logprobs is not None and exp.rollout_logprobs is not None
    mask = exp.response_mask.bool()
    with torch.no_grad():
        at_1 = rig.policy.forward(exp.sequences).logprobs
    torch.testing.assert_close(exp.old_logprobs[mask], at_1[mask], atol=1e-6, rtol=0)
    assert rows == 2 * len(exp)  # temperature 1 for the loss, the sampling one for the weights
    # shifted so that old - rollout is the mismatch at the sampling temperature: 0 here
    torch.testing.assert_close(exp.rollout_logprobs[mask], at_1[mask], atol=1e-5, rtol=0)


def test_the_update_is_the_gradient_of_the_loss_on_the_sampling_distribution() -> None:
    rig = _rig(TEMPERATURE, synced=False)
    exp, _ = _experience(rig)
    assert exp.old_logprobs is not None and exp.rollout_logprobs is not None
    # the behaviour policy differs: the correction's weights are not all 1
    assert float((exp.old_logprobs - exp.rollout_logprobs).abs().max()) > 1e-2

    # by hand, before the step moves the weights: the PPO loss with the correction, on
    # log-probs at the sampling temperature
    module = rig.policy.module
    module.zero_grad()
    out = rig.policy.forward(exp.sequences, temperature=TEMPERATURE)
    loss = compute_policy_loss(
        "ppo",
        PolicyLossInputs(
            logprobs=out.logprobs,
            old_logprobs=exp.old_logprobs,
            advantages=exp.advantages,
            response_mask=exp.response_mask,
            rollout_logprobs=exp.rollout_logprobs,
        ),
        OFF_POLICY.resolved_loss,
    ).loss
    loss.backward()
    want = torch.cat([p.grad.flatten() for p in module.parameters() if p.grad is not None])
    module.zero_grad()

    got = _gradient(rig, exp, TEMPERATURE)
    torch.testing.assert_close(got, want, atol=1e-7, rtol=1e-5)
    at_one = _gradient(_rig(TEMPERATURE, synced=False), exp, 1.0)  # the same batch at T = 1
    assert float((got - at_one).norm()) > 0.05 * float(want.norm())


@pytest.mark.parametrize("bad", [0.0, -0.5])
def test_a_non_positive_temperature_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="logprob_temperature"):
        replace(OFF_POLICY, logprob_temperature=bad)
