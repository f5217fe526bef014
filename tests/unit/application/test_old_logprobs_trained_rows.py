"""The experience maker forwards the old policy only on the samples the optimizer trains when
the loss ratio is the only reader of the old log-probs (``stages/trained_row_selection.py``,
``application/trained_rows.py``), and the update is the one the full forward gives."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest
import torch
from torch import Tensor

from lightrft.application.cycle import RLCycle
from lightrft.application.params import AlgorithmParams, TrainParams
from lightrft.application.policy_optimizer import PolicyOptimizer
from lightrft.application.trained_rows import rows_with_advantage
from lightrft.domain.policy_losses import PolicyLossParams
from lightrft.domain.rewards import RunningMoments
from lightrft.domain.types import Experience, RewardResult
from tests.helpers.fake_cycle import FakeRig, build_rig
from tests.helpers.simulated_ranks import run_on_ranks
from tests.helpers.token_budget_rig import GradRecorder, ThreadCollective

# what one_step_off runs: GRPO, PPO loss with the TIS correction, old log-probs recomputed
# (two mini-batches), sampling at a temperature other than 1 (a second no-grad forward)
OFF_POLICY = AlgorithmParams(
    advantage_estimator="grpo", policy_loss="ppo", loss=PolicyLossParams(tis_cap=2.0)
)
TEMPERATURE = 0.7


def _rig(
    algorithm: AlgorithmParams = OFF_POLICY, *, skip: bool = True, measure_mismatch: bool = False
) -> FakeRig:
    rig = build_rig(algorithm, prompts_per_step=8, n=4, mini_batch_size=16, seed=2)
    maker = rig.cycle.maker
    sampling = replace(maker.rollout.sampling, temperature=TEMPERATURE)
    maker.rollout = replace(maker.rollout, sampling=sampling, measure_mismatch=measure_mismatch)
    maker.skip_zero_advantage_rows = skip
    rig.rule.score = _half_the_groups_vary  # type: ignore[method-assign]
    return rig


def _half_the_groups_vary(samples: Sequence[object]) -> RewardResult:
    """1 for the first sample of every other group of 4 (rows are prompt-major), else 0: the
    other groups scored alike and train nothing."""
    scores = [float(i % 4 == 0 and (i // 4) % 2 == 0) for i in range(len(samples))]
    return RewardResult(torch.tensor(scores), {})


def _experience(rig: FakeRig, kl_coef: float = 0.0) -> tuple[Experience, dict[str, float], int]:
    """The experience, its metrics and the rows the policy forwarded to make it."""
    prompts = [rig.cycle.components.prompts[i] for i in range(8)]
    before = rig.policy.forward_rows
    batch = rig.cycle.maker.make(prompts, seed=11, kl_coef=kl_coef, moments=RunningMoments())
    return batch.experience, batch.metrics, rig.policy.forward_rows - before


SKIPPING = TrainParams(mini_batch_size=16, micro_batch_size=4, skip_zero_advantage_rows=True)


def _train(
    rig: FakeRig,
    experience: Experience,
    algorithm: AlgorithmParams = OFF_POLICY,
    train: TrainParams = SKIPPING,
) -> list[torch.Tensor]:
    """Gradients of each optimizer step (by default training with zero-advantage rows left
    out)."""
    strategy = GradRecorder()
    strategy.prepare(rig.policy.module)
    PolicyOptimizer(
        policy=rig.policy,
        strategy=strategy,
        collective=rig.cycle.components.collective,
        algorithm=algorithm,
        train=train,
    ).train(experience, kl_coef=0.0, step=0)
    return strategy.grads


def test_old_logprobs_on_trained_rows_match_the_full_forward_and_the_update_is_the_same() -> None:
    full, _, full_rows = _experience(_rig(skip=False))
    part, metrics, part_rows = _experience(_rig(skip=True))
    assert full.old_logprobs is not None and part.old_logprobs is not None
    torch.testing.assert_close(part.advantages, full.advantages, atol=0, rtol=0)
    trained = rows_with_advantage(full.advantages, full.response_mask)
    assert 0 < int(trained.sum()) < len(full)  # some groups scored alike, some did not
    mask = full.response_mask.bool() & trained[:, None]
    torch.testing.assert_close(part.old_logprobs[mask], full.old_logprobs[mask], atol=1e-6, rtol=0)
    assert part.rollout_logprobs is not None and full.rollout_logprobs is not None
    torch.testing.assert_close(
        part.rollout_logprobs[mask], full.rollout_logprobs[mask], atol=1e-6, rtol=0
    )
    assert bool((part.old_logprobs[~trained] == 0).all())  # unset, never read
    # two no-grad forwards (temperature 1 and the sampling temperature), each on the trained
    # rows only
    assert full_rows == 2 * len(full) and part_rows == 2 * int(trained.sum())
    assert metrics["logprobs/old_forwarded_fraction"] == pytest.approx(
        float(trained.float().mean())
    )

    full_grads = _train(_rig(), full)
    part_grads = _train(_rig(), part)
    assert len(full_grads) == len(part_grads) == 2
    for got, want in zip(part_grads, full_grads, strict=True):
        torch.testing.assert_close(got, want, atol=1e-7, rtol=1e-6)
    assert max(float(g.abs().max()) for g in full_grads) > 1e-4  # the step really moves


def test_no_trained_row_forwards_nothing() -> None:
    rig = _rig()
    rig.rule.score = lambda samples: RewardResult(torch.zeros(len(samples)), {})  # type: ignore[method-assign]
    exp, metrics, rows = _experience(rig)
    assert rows == 0 and metrics["logprobs/old_forwarded_fraction"] == 0.0
    assert exp.old_logprobs is not None and bool((exp.old_logprobs == 0).all())


@pytest.mark.parametrize(
    ("algorithm", "kl_coef", "measure_mismatch"),
    [
        (replace(OFF_POLICY, kl_coef=0.01), 0.01, False),  # KL term in the loss
        (replace(OFF_POLICY, entropy_coef=0.01), 0.0, False),  # entropy term
        (replace(OFF_POLICY, high_entropy_fraction=0.5), 0.0, False),  # high-entropy tokens
        (OFF_POLICY, 0.0, True),  # mismatch metrics over every row
        (replace(OFF_POLICY, advantage_estimator="gae"), 0.0, False),  # a critic
        (replace(OFF_POLICY, advantage_estimator="cpgd", policy_loss="cpgd"), 0.0, False),
    ],
    ids=["kl", "entropy", "high_entropy", "mismatch", "critic", "cpgd"],
)
def test_every_row_is_forwarded_when_another_reader_needs_old_logprobs(
    algorithm: AlgorithmParams, kl_coef: float, measure_mismatch: bool
) -> None:
    rig = _rig(algorithm, measure_mismatch=measure_mismatch)
    exp, metrics, rows = _experience(rig, kl_coef=kl_coef)
    assert exp.old_logprobs is not None
    # every sampled token has its (negative) log-prob: no row was left out
    assert bool((exp.old_logprobs[exp.response_mask.bool()] < 0).all())
    assert rows >= len(exp)
    assert "logprobs/old_forwarded_fraction" not in metrics


def test_every_row_is_forwarded_without_skip_zero_advantage_rows() -> None:
    exp, metrics, rows = _experience(_rig(skip=False))
    assert exp.old_logprobs is not None
    assert bool((exp.old_logprobs[exp.response_mask.bool()] < 0).all())
    assert rows == 2 * len(exp) and "logprobs/old_forwarded_fraction" not in metrics


def test_ranks_with_different_trained_rows_run_as_many_forwards() -> None:
    rigs = [_rig(), _rig()]  # rank 1: every group scored alike, nothing to forward alone
    rigs[1].rule.score = lambda samples: RewardResult(torch.zeros(len(samples)), {})  # type: ignore[method-assign]
    calls_before = [rig.policy.forward_calls for rig in rigs]

    def rank_fn(rank: int) -> Callable[[Callable[[Tensor], Tensor]], object]:
        def run(reduce: Callable[[Tensor], Tensor]) -> object:
            rigs[rank].cycle.maker.collective = ThreadCollective(rank, 2, reduce)
            return _experience(rigs[rank])

        return run

    results = run_on_ranks([rank_fn(0), rank_fn(1)])
    calls = [rig.policy.forward_calls - n for rig, n in zip(rigs, calls_before, strict=True)]
    assert calls[0] == calls[1] > 0
    alone, _, _ = _experience(_rig())  # rank 0's experience is what it computes alone
    got = results[0][0]  # type: ignore[index]
    assert got.old_logprobs is not None and alone.old_logprobs is not None
    torch.testing.assert_close(got.old_logprobs, alone.old_logprobs)


def test_the_cycle_gives_the_maker_the_optimizer_flag() -> None:
    rig = build_rig(OFF_POLICY)
    settings = rig.cycle.settings
    for skip in (False, True):
        train = replace(settings.train, skip_zero_advantage_rows=skip)
        cycle = RLCycle(rig.cycle.components, replace(settings, train=train))
        assert cycle.maker.skip_zero_advantage_rows is skip
