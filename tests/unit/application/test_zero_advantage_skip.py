"""Samples whose loss is exactly zero take no forward or backward
(``TrainParams.skip_zero_advantage_rows``), and the gradient stays what training them gives."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
import torch
from torch import Tensor

from lightrft.adapters.fakes import FakePolicy
from lightrft.application.params import AlgorithmParams, TrainParams
from lightrft.domain.types import Experience
from tests.helpers.simulated_ranks import run_on_ranks
from tests.helpers.token_budget_rig import ThreadCollective, train_once, uneven_experience

LENGTHS = [3, 1, 4, 2, 5, 2, 1, 3, 2, 4, 3, 1]  # 6 groups of 2
ADVANTAGE_ONLY = AlgorithmParams()  # ppo, no entropy term


def half_silent(lengths: list[int] = LENGTHS) -> Experience:
    """Groups 0, 2 and 4 scored alike (advantages all zero); the others keep the ramp."""
    exp = uneven_experience(lengths, group_size=2)
    silent = (exp.group_index % 2 == 0)[:, None]
    return replace(exp, advantages=torch.where(silent, 0.0, exp.advantages))


def run(
    exp: Experience, skip: bool, algorithm: AlgorithmParams = ADVANTAGE_ONLY, **train: int
) -> tuple[Tensor, FakePolicy, int]:
    policy = FakePolicy(seed=5)
    params = TrainParams(micro_batch_size=2, skip_zero_advantage_rows=skip, **train)
    grad, strategy = train_once(policy, exp, params, algorithm=algorithm)
    return grad, policy, strategy.backward_calls


@pytest.mark.parametrize("train", [{}, {"max_tokens_per_micro_batch": 9}])
def test_skipping_silent_groups_gives_the_same_gradient_with_half_the_rows(
    train: dict[str, int],
) -> None:
    exp = half_silent()
    full, full_policy, _ = run(exp, skip=False, **train)
    skipped, skip_policy, _ = run(exp, skip=True, **train)
    torch.testing.assert_close(skipped, full, atol=1e-7, rtol=1e-5)
    assert full.abs().max() > 1e-4  # the live groups really move the weights
    assert full_policy.forward_rows == len(exp) and skip_policy.forward_rows == len(exp) // 2


def test_a_batch_with_no_signal_runs_one_zero_weight_row_so_the_step_has_zero_grads() -> None:
    exp = half_silent()
    exp = replace(exp, advantages=torch.zeros_like(exp.advantages))
    grad, policy, backwards = run(exp, skip=True)
    # gradients exist (an optimizer with momentum moves exactly as after a trained all-zero
    # batch) and are zero; one row ran instead of twelve
    assert grad.numel() > 0 and bool((grad == 0).all())
    assert policy.forward_rows == 1 and backwards == 1


@pytest.mark.parametrize(
    "algorithm",
    [
        AlgorithmParams(entropy_coef=0.01),  # the entropy term has no advantage in it
        AlgorithmParams(policy_loss="cpgd"),  # nor does CPGD's drift penalty
    ],
    ids=["entropy", "cpgd"],
)
def test_losses_with_a_term_beyond_the_advantage_train_every_row(
    algorithm: AlgorithmParams,
) -> None:
    exp = half_silent()
    full, _, _ = run(exp, skip=False, algorithm=algorithm)
    kept, policy, _ = run(exp, skip=True, algorithm=algorithm)
    assert policy.forward_rows == len(exp)
    torch.testing.assert_close(kept, full)


def _rank(exp: Experience, policy: FakePolicy) -> Callable[[Callable[[Tensor], Tensor]], object]:
    def go(reduce: Callable[[Tensor], Tensor]) -> object:
        rank = int(exp.group_index[0] != 0)
        params = TrainParams(micro_batch_size=2, skip_zero_advantage_rows=True)
        grad, strategy = train_once(
            policy, exp, params, ThreadCollective(rank, 2, reduce), ADVANTAGE_ONLY
        )
        return grad, strategy.backward_calls

    return go


def test_ranks_with_different_silent_shares_run_as_many_backwards_and_equal_one_rank() -> None:
    union = half_silent()
    # rank 0: groups 0-2 (0 and 2 silent: one micro-batch of 2 live rows), rank 1: groups
    # 3-5 (4 silent: two micro-batches)
    parts = (union.select(torch.arange(6)), union.select(torch.arange(6, 12)))
    # the policies are built before the threads start: their seeded init uses the global RNG
    policies = [FakePolicy(seed=5), FakePolicy(seed=5)]
    runs = [_rank(part, policy) for part, policy in zip(parts, policies, strict=True)]
    (g0, b0), (g1, b1) = run_on_ranks(runs)  # type: ignore[misc]
    assert b0 == b1 == 2  # a sharded strategy's collectives pair up
    one, _, _ = run(union, skip=False)
    torch.testing.assert_close((g0 + g1) / 2, one, atol=1e-7, rtol=1e-5)
