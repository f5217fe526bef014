"""Token-budget no-grad forwards in the ExperienceMaker (old / reference log-probs, values):
the same experience as fixed-count micro-batches, and as many forwards on every rank."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import torch
from torch import Tensor

from lightrft.application.params import AlgorithmParams
from lightrft.domain.rewards import RunningMoments
from lightrft.domain.token_budget import plan_token_budget
from tests.helpers.fake_cycle import FakeRig, build_rig
from tests.helpers.simulated_ranks import run_on_ranks
from tests.helpers.token_budget_rig import ThreadCollective

GAE_WITH_KL = AlgorithmParams(advantage_estimator="gae", policy_loss="ppo", kl_coef=0.01)


def _rig(budget: int | None) -> FakeRig:
    rig = build_rig(GAE_WITH_KL, prompts_per_step=4, n=4, mini_batch_size=8, seed=3)
    maker = rig.cycle.maker
    maker.rollout = replace(maker.rollout, max_tokens_per_forward=budget)
    return rig


def _make(rig: FakeRig, prompt_range: range):  # type: ignore[no-untyped-def]
    prompts = [rig.cycle.components.prompts[i] for i in prompt_range]
    return rig.cycle.maker.make(prompts, seed=5, kl_coef=0.01, moments=RunningMoments())


def test_token_budget_forwards_give_the_fixed_count_experience() -> None:
    want = _make(_rig(None), range(4)).experience
    for budget in (6, 13, 40):
        got = _make(_rig(budget), range(4)).experience
        assert got.old_logprobs is not None and want.old_logprobs is not None
        assert got.ref_logprobs is not None and want.ref_logprobs is not None
        assert got.values is not None and want.values is not None
        torch.testing.assert_close(got.old_logprobs, want.old_logprobs, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(got.ref_logprobs, want.ref_logprobs, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(got.values, want.values, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(got.advantages, want.advantages, atol=1e-5, rtol=1e-4)


def test_ranks_run_as_many_forwards() -> None:
    rigs = [_rig(14), _rig(14)]
    calls_before = [rig.policy.forward_calls for rig in rigs]

    def rank_fn(rank: int) -> Callable[[Callable[[Tensor], Tensor]], object]:
        def run(reduce: Callable[[Tensor], Tensor]) -> object:
            rigs[rank].cycle.maker.collective = ThreadCollective(rank, 2, reduce)
            return _make(rigs[rank], range(rank * 4, rank * 4 + 4))

        return run

    batches = run_on_ranks([rank_fn(0), rank_fn(1)])
    calls = [
        rig.policy.forward_calls - before for rig, before in zip(rigs, calls_before, strict=True)
    ]
    alone_counts = [
        plan_token_budget(
            b.experience.sequences.attention_mask.sum(-1).tolist(),
            14,
            groups=b.experience.group_index.tolist(),
        ).count
        for b in batches
    ]
    assert alone_counts[0] != alone_counts[1]  # the lengths differ enough to disagree
    assert calls[0] == calls[1] == max(alone_counts)  # one old-log-prob pass each
    # each rank's experience equals what it computes alone
    for rank, batch in enumerate(batches):
        alone = _make(_rig(14), range(rank * 4, rank * 4 + 4)).experience
        torch.testing.assert_close(batch.experience.old_logprobs, alone.old_logprobs)
