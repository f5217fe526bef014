"""Token-budget micro-batches in the PolicyOptimizer: the update does not depend on the
grouping, ranks agree on the micro-batch count, and an oversized sample is reported."""

from __future__ import annotations

from collections.abc import Callable

import torch
from structlog.testing import capture_logs
from torch import Tensor

from lightrft.adapters.fakes import FakePolicy
from lightrft.application.params import TrainParams
from lightrft.domain.types import Experience
from tests.helpers.simulated_ranks import run_on_ranks
from tests.helpers.token_budget_rig import ThreadCollective, train_once, uneven_experience

SHORT = [1, 2, 1, 3, 2, 1, 2, 2]  # rank 0: short answers
LONG = [9, 14, 3, 11, 12, 6, 15, 10]  # rank 1: long, uneven answers


def test_the_update_does_not_depend_on_the_grouping() -> None:
    exp = uneven_experience(LONG, group_size=2)
    whole, _ = train_once(FakePolicy(seed=1), exp, TrainParams(micro_batch_size=len(LONG)))
    for budget in (12, 20, 35, 200):
        got, strategy = train_once(
            FakePolicy(seed=1), exp, TrainParams(max_tokens_per_micro_batch=budget, seed=budget)
        )
        torch.testing.assert_close(got, whole, atol=1e-7, rtol=1e-5)
    # the smallest budget really splits: 18 samples' worth of tokens over several backwards
    _, strategy = train_once(FakePolicy(seed=1), exp, TrainParams(max_tokens_per_micro_batch=12))
    assert strategy.backward_calls >= 8


def test_a_sample_over_the_budget_trains_alone_with_a_warning() -> None:
    exp = uneven_experience([2, 2, 30, 1], group_size=2)
    whole, _ = train_once(FakePolicy(seed=2), exp, TrainParams(micro_batch_size=4))
    with capture_logs() as logs:
        got, _ = train_once(FakePolicy(seed=2), exp, TrainParams(max_tokens_per_micro_batch=10))
    warnings = [e for e in logs if e["event"] == "batching.sample_over_token_budget"]
    # sample 2 has 3 prompt + 30 response tokens = 33 > 10
    assert warnings and warnings[0]["samples"] == 1 and warnings[0]["longest"] == 33
    torch.testing.assert_close(got, whole, atol=1e-7, rtol=1e-5)


def _rank(
    exp: Experience, policy: FakePolicy, budget: int
) -> Callable[[Callable[[Tensor], Tensor]], object]:
    def run(reduce: Callable[[Tensor], Tensor]) -> object:
        rank = 0 if exp is EXPERIENCES[0] else 1
        grad, strategy = train_once(
            policy,
            exp,
            TrainParams(max_tokens_per_micro_batch=budget),
            ThreadCollective(rank, 2, reduce),
        )
        return grad, policy.forward_calls, strategy.backward_calls

    return run


UNION = uneven_experience(SHORT + LONG, group_size=2)  # 8 groups of 2, advantages ramp
EXPERIENCES = (UNION.select(torch.arange(8)), UNION.select(torch.arange(8, 16)))


def test_two_ranks_with_different_lengths_agree_on_the_count_and_equal_one_rank() -> None:
    budget = 20
    policies = [FakePolicy(seed=4), FakePolicy(seed=4)]
    results = run_on_ranks([_rank(EXPERIENCES[r], policies[r], budget) for r in range(2)])
    (g0, f0, b0), (g1, f1, b1) = results  # type: ignore[misc]
    # rank 0 holds 8 * 3 + 14 = 38 tokens (2 micro-batches alone), rank 1 8 * 3 + 80 = 104
    # (at least 104 / 20 -> 6): both run as many forwards and backwards as the busier rank
    assert f0 == f1 and b0 == b1 and b1 >= 6
    # the strategies of the two ranks would average their gradients; that average equals
    # one rank training on both ranks' samples (the normalizer counts every rank's tokens)
    one, _ = train_once(FakePolicy(seed=4), UNION, TrainParams(max_tokens_per_micro_batch=budget))
    torch.testing.assert_close((g0 + g1) / 2, one, atol=1e-7, rtol=1e-5)
