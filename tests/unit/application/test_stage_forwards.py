"""The no-grad forward stages (old, reference, teacher log-probs, critic values) and the
rollout correction: each equals the model's own forward on the whole batch, runs on the
steps it is for, and the correction is old - trainer_T + engine_T."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from lightrft.adapters.fakes import FakeCollective, FakeCritic, FakePolicy, FakeReferenceModel
from lightrft.application.params import RolloutParams
from lightrft.application.phases import Phase, PhaseSwitcher
from lightrft.application.stages.critic_values import CriticValues
from lightrft.application.stages.in_phase import InPhase
from lightrft.application.stages.no_grad_forward import NoGradForward, PlanForwards
from lightrft.application.stages.old_logprobs import OldLogprobs
from lightrft.application.stages.records import Annotation
from lightrft.application.stages.reference_logprobs import ReferenceLogprobs
from lightrft.application.stages.rollout_correction import RolloutCorrection
from lightrft.application.stages.teacher_logprobs import TeacherLogprobs
from tests.helpers.stage_work import work

SCORES = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0]


def _planned(kl_coef: float = 0.0, temperature: float = 1.0) -> tuple[Annotation, NoGradForward]:
    record = work(SCORES, kl_coef=kl_coef, temperature=temperature)
    forward = NoGradForward(RolloutParams(forward_micro_batch_size=4), FakeCollective(), 1.0)
    PlanForwards(forward)(record)
    return record, forward


def test_the_plan_splits_every_row_into_micro_batches() -> None:
    record, _ = _planned()
    assert [b.tolist() for b in record.batches] == [[0, 1, 2, 3], [4, 5]]
    assert record.old_batches is record.batches


def test_old_logprobs_equal_the_policys_forward_on_the_whole_batch() -> None:
    record, forward = _planned()
    policy = FakePolicy(seed=4)
    OldLogprobs(policy, forward, always=True, with_entropy=True)(record)
    whole = policy.forward(record.tensors.sequences, with_entropy=True)
    assert record.old is not None and record.entropy is not None and whole.entropy is not None
    torch.testing.assert_close(record.old, whole.logprobs.detach())
    torch.testing.assert_close(record.entropy, whole.entropy.detach())
    assert policy.forward_calls == 1 + 2  # the two micro-batches, then the check's


@pytest.mark.parametrize(("kl_coef", "runs"), [(0.0, False), (0.1, True)])
def test_old_logprobs_read_only_by_the_kl_run_on_steps_with_a_kl(
    kl_coef: float, runs: bool
) -> None:
    record, forward = _planned(kl_coef)
    OldLogprobs(FakePolicy(seed=4), forward, always=False, with_entropy=False)(record)
    assert (record.old is not None) is runs


@pytest.mark.parametrize(("kl_coef", "runs"), [(0.0, False), (0.1, True)])
def test_the_reference_runs_on_steps_with_a_kl(kl_coef: float, runs: bool) -> None:
    record, forward = _planned(kl_coef)
    reference = FakeReferenceModel(FakePolicy(seed=5).module)
    ReferenceLogprobs(reference, forward)(record)
    assert (record.ref is not None) is runs
    if record.ref is not None:
        whole = reference.forward(record.tensors.sequences).logprobs
        torch.testing.assert_close(record.ref, whole)


def test_teachers_are_stacked_in_order() -> None:
    record, forward = _planned()
    teachers = [FakeReferenceModel(FakePolicy(seed=s).module) for s in (7, 8)]
    TeacherLogprobs(teachers, forward)(record)
    assert record.teacher is not None and record.teacher.shape == (2, 6, 4)
    for k, teacher in enumerate(teachers):
        torch.testing.assert_close(
            record.teacher[k], teacher.forward(record.tensors.sequences).logprobs
        )


def test_values_equal_the_critics() -> None:
    record, forward = _planned()
    critic = FakeCritic(seed=3)
    CriticValues(critic, forward)(record)
    assert record.values is not None
    expected = critic.values(record.tensors.sequences).detach()
    torch.testing.assert_close(record.values, expected)


def test_the_correction_shifts_the_engines_logprobs_to_the_loss_temperature() -> None:
    record, forward = _planned(temperature=0.5)
    policy = FakePolicy(seed=1)  # the engine's weights (seed 1)
    record.old = torch.full((6, 4), -2.0)  # as if at the loss's temperature 1
    engine = record.rollout_logprobs
    assert engine is not None
    RolloutCorrection(policy, forward, 0.5, measure=True, correct=True)(record)
    trainer = policy.forward(record.tensors.sequences, temperature=0.5).logprobs.detach()
    assert record.rollout_logprobs is not None
    torch.testing.assert_close(record.rollout_logprobs, (-2.0 - trainer + engine) * record.mask)
    # the engine sampled from the same weights at the same temperature: no mismatch
    assert record.metrics["rollout/logp_diff_max"] < 1e-4


def test_no_shift_when_the_loss_and_the_engine_share_the_temperature() -> None:
    record, forward = _planned()
    policy = FakePolicy(seed=1)
    OldLogprobs(policy, forward, always=True, with_entropy=False)(record)
    engine = record.rollout_logprobs
    calls = policy.forward_calls
    RolloutCorrection(policy, forward, 1.0, measure=False, correct=True)(record)
    assert record.rollout_logprobs is engine and policy.forward_calls == calls
    assert not record.metrics


def test_a_phase_group_runs_its_stages_in_order_inside_the_phase() -> None:
    phases = PhaseSwitcher({})
    seen: list[tuple[str, str | None]] = []

    def stage(name: str) -> Callable[[Annotation], None]:
        return lambda record: seen.append((name, phases.current))

    InPhase(phases, Phase.REFERENCE, [stage("a"), stage("b")])(work(SCORES))
    assert seen == [("a", Phase.REFERENCE), ("b", Phase.REFERENCE)]
    assert phases.current is None
