"""On-policy distillation through the fake cycle: the experience's advantage is the weighted
teachers' log-probs minus the student's on its own samples, teachers are awake only in the
reference phase, and training on it brings the student towards the teacher."""

from __future__ import annotations

import torch

from lightrft.adapters.fakes import FakePolicy, FakeReferenceModel
from lightrft.application.params import AlgorithmParams
from lightrft.domain.advantages import AdvantageParams
from lightrft.domain.rewards import RunningMoments
from tests.helpers.fake_cycle import build_rig

WEIGHTS = (0.4, 0.6)


def _opd(weights: tuple[float, ...] = WEIGHTS, opd_weight: float = 1.0) -> AlgorithmParams:
    return AlgorithmParams(
        advantage_estimator="opd",
        advantage=AdvantageParams(teacher_weights=weights, opd_weight=opd_weight),
    )


def _teacher(seed: int) -> FakeReferenceModel:
    return FakeReferenceModel(FakePolicy(seed=seed).module)


def test_the_advantage_is_weighted_teacher_minus_student_logprobs() -> None:
    teachers = [_teacher(11), _teacher(12)]
    rig = build_rig(_opd(), prompts_per_step=3, n=2, teachers=teachers)
    prompts = [rig.cycle.components.prompts[i] for i in range(3)]
    batch = rig.cycle.maker.make(prompts, seed=1, kl_coef=0.0, moments=RunningMoments())
    exp = batch.experience
    mask = exp.sequences.response_mask.bool()
    # independently: each model's log-probs of the sampled tokens, computed again here
    student = rig.policy.forward(exp.sequences).logprobs.detach()
    for teacher in teachers:
        teacher.onload()
    t1, t2 = (t.forward(exp.sequences).logprobs for t in teachers)
    want = torch.where(mask, 0.4 * (t1 - student) + 0.6 * (t2 - student), 0.0)
    torch.testing.assert_close(exp.advantages, want, atol=1e-5, rtol=1e-5)


def test_teachers_sleep_outside_the_reference_phase() -> None:
    teachers = [_teacher(11)]
    rig = build_rig(_opd((1.0,)), prompts_per_step=2, n=2, total_steps=2, teachers=teachers)
    rig.cycle.run(resume=False)
    # each step: awake for the reference phase (offloaded while offloaded forwards raise),
    # asleep for training
    assert teachers[0].forward_calls >= 2
    assert teachers[0].onloads >= 2 and not teachers[0].is_loaded


def test_training_on_the_distillation_advantage_lowers_the_reverse_kl() -> None:
    rig = build_rig(_opd((1.0,)), prompts_per_step=4, n=4, total_steps=25, teachers=[_teacher(7)])
    rig.cycle.run(resume=False)
    kl = [value for _, value in rig.tracker.series("distill/reverse_kl")]
    first, last = sum(kl[:3]) / 3, sum(kl[-3:]) / 3
    assert last < 0.7 * first, kl
