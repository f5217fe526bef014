"""Which stages the assembly chooses from the settings, in which order, and the models an
estimator needs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lightrft.adapters.fakes import (
    FakeCollective,
    FakeCritic,
    FakePolicy,
    FakeReferenceModel,
    FakeRolloutEngine,
    FakeRuleReward,
)
from lightrft.application.params import AlgorithmParams, RewardShapingParams, RolloutParams
from lightrft.application.phases import PhaseSwitcher
from lightrft.application.stages.assembly import ExperienceParts, assemble
from lightrft.application.stages.dynamic_sampling import DynamicSampling
from lightrft.domain.advantages import AdvantageParams
from lightrft.domain.policy_losses import PolicyLossParams

GRPO = AlgorithmParams(advantage_estimator="grpo", policy_loss="ppo")
POLICY = FakePolicy(seed=0)


def _parts(algorithm: AlgorithmParams = GRPO, **changes: object) -> ExperienceParts:
    parts = ExperienceParts(
        engine=FakeRolloutEngine(seed=1),
        policy=POLICY,
        reward_sources=[FakeRuleReward()],
        collective=FakeCollective(),
        phases=PhaseSwitcher({}),
        rollout=RolloutParams(),
        algorithm=algorithm,
        shaping=RewardShapingParams(weights={"rule": 1.0}),
        recompute_old_logprobs=False,
    )
    return replace(parts, **changes)  # type: ignore[arg-type]


def _names(parts: ExperienceParts) -> list[str]:
    return assemble(parts).stage_names()


def _reference() -> FakeReferenceModel:
    return FakeReferenceModel(POLICY.module)


REF = "reference:"


def test_on_policy_grpo_needs_no_forward_at_all() -> None:
    assert _names(_parts()) == [
        "ShapeRewards",
        "InPhase",
        REF + "PlanForwards",
        REF + "Advantages",
    ]


def test_several_optimizer_steps_and_a_kl_add_the_old_and_reference_forwards() -> None:
    parts = _parts(replace(GRPO, kl_coef=0.01), reference=_reference(), recompute_old_logprobs=True)
    assert _names(parts)[2:] == [
        REF + "PlanForwards",
        REF + "OldLogprobs",
        REF + "ReferenceLogprobs",
        REF + "KLEstimate",
        REF + "Advantages",
    ]


def test_a_kl_in_the_reward_reads_the_old_logprobs_on_kl_steps_only() -> None:
    algorithm = AlgorithmParams(advantage_estimator="reinforce_pp", policy_loss="ppo", kl_coef=0.01)
    pipeline = assemble(_parts(algorithm, reference=_reference()))
    old = [s for s in pipeline.annotation[-1].stages if type(s).__name__ == "OldLogprobs"]  # type: ignore[attr-defined]
    assert len(old) == 1 and old[0].always is False


def test_gae_adds_the_critic_and_distillation_the_teachers() -> None:
    gae = AlgorithmParams(advantage_estimator="gae", policy_loss="ppo")
    assert REF + "CriticValues" in _names(_parts(gae, critic=FakeCritic(seed=0)))
    opd = AlgorithmParams(
        advantage_estimator="opd", advantage=AdvantageParams(teacher_weights=(1.0,))
    )
    names = _names(_parts(opd, teachers=[_reference()]))
    assert names.index(REF + "OldLogprobs") < names.index(REF + "TeacherLogprobs")


def test_turn_credit_high_entropy_and_the_correction_have_their_stages() -> None:
    algorithm = replace(
        GRPO,
        turn_credit=True,
        high_entropy_fraction=0.2,
        loss=PolicyLossParams(tis_cap=2.0),
    )
    names = _names(_parts(algorithm))
    assert names[:2] == ["ShapeRewards", "TurnCredit"]
    assert names[-4:] == [
        REF + "OldLogprobs",
        REF + "RolloutCorrection",
        REF + "Advantages",
        REF + "HighEntropyTokens",
    ]


def test_the_trained_rows_come_first_when_only_the_loss_reads_old_logprobs() -> None:
    algorithm = replace(GRPO, loss=PolicyLossParams(tis_cap=2.0))
    names = _names(_parts(algorithm, skip_zero_advantage_rows=True))
    assert names[2:] == [
        REF + "PlanForwards",
        REF + "SelectTrainedRows",
        REF + "OldLogprobs",
        REF + "RolloutCorrection",
        REF + "Advantages",
    ]
    # the mismatch metrics read every row: no selection
    measured = _parts(
        algorithm, skip_zero_advantage_rows=True, rollout=RolloutParams(measure_mismatch=True)
    )
    assert REF + "SelectTrainedRows" not in _names(measured)
    # without the optimizer's skipping nothing is left out
    assert REF + "SelectTrainedRows" not in _names(_parts(algorithm))


def test_the_collection_samples_once_or_dynamically_and_adds_remaxs_baseline() -> None:
    plain = assemble(_parts()).collection
    assert plain.baseline is None and not isinstance(plain.sample, DynamicSampling)
    dynamic = assemble(_parts(rollout=RolloutParams(dynamic_sampling=True))).collection
    assert isinstance(dynamic.sample, DynamicSampling)
    remax = AlgorithmParams(advantage_estimator="remax", policy_loss="ppo")
    assert assemble(_parts(remax)).collection.baseline is not None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"reward_sources": []}, "reward_sources is empty"),
        ({"algorithm": AlgorithmParams(advantage_estimator="gae")}, "needs a critic"),
        ({"algorithm": replace(GRPO, kl_coef=0.1)}, "kl_coef > 0 needs a reference model"),
        (
            {
                "algorithm": AlgorithmParams(
                    advantage_estimator="opd", advantage=AdvantageParams(teacher_weights=(0.5, 0.5))
                )
            },
            "weighs 2 teacher",
        ),
    ],
)
def test_a_missing_model_is_named(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        assemble(_parts(**changes))  # type: ignore[arg-type]
