"""On-policy distillation through the fake cycle: the experience's advantage is the weighted
teachers' log-probs minus the student's on its own samples, teachers are awake only in the
reference phase, and training on it brings the student towards the teacher."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.fakes import FakePolicy, FakeReferenceModel
from lightrft.adapters.fakes.response_logprobs import predicting_columns
from lightrft.application.params import AlgorithmParams
from lightrft.domain.advantages import AdvantageParams
from lightrft.domain.rewards import RunningMoments
from lightrft.domain.types import SequenceBatch
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


def _exact_reverse_kl(
    student: torch.nn.Module, teacher: torch.nn.Module, seq: SequenceBatch
) -> float:
    """Mean over response tokens of KL(student || teacher) over the whole vocabulary, at the
    contexts of ``seq`` (computed from the modules' logits, not from the cycle)."""
    columns = predicting_columns(seq)
    with torch.no_grad():
        s = torch.log_softmax(student(seq.input_ids, seq.attention_mask)[:, columns], -1)
        t = torch.log_softmax(teacher(seq.input_ids, seq.attention_mask)[:, columns], -1)
    kl = (s.exp() * (s - t)).sum(-1)  # [B, R]
    mask = seq.response_mask.bool()
    return float(kl[mask].mean())


@pytest.mark.slow
def test_training_on_the_distillation_advantage_lowers_the_exact_reverse_kl() -> None:
    teacher = _teacher(7)
    rig = build_rig(_opd((1.0,)), prompts_per_step=4, n=4, total_steps=25, teachers=[teacher])
    prompts = [rig.cycle.components.prompts[i] for i in range(200, 216)]
    seq = rig.cycle.maker.make(prompts, seed=9, kl_coef=0.0, moments=RunningMoments())
    contexts = seq.experience.sequences  # fixed contexts, sampled before training
    teacher.onload()
    before = _exact_reverse_kl(rig.policy.module, teacher.module, contexts)
    rig.cycle.run(resume=False)
    teacher.onload()
    after = _exact_reverse_kl(rig.policy.module, teacher.module, contexts)
    assert after < 0.5 * before, (before, after)
