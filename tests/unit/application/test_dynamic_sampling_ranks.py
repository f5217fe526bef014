"""Dynamic sampling on several data-parallel ranks: every rank ends with the same batch size.

Sharded strategies run collectives in every forward and micro-batch, so ranks that kept
different numbers of informative groups would wait on each other forever.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from lightrft.domain.rewards import RunningMoments
from lightrft.domain.types import RewardResult, RewardSample
from tests.helpers.fake_cycle import build_rig
from tests.helpers.simulated_ranks import ThreadCollective, run_on_ranks

PROMPTS_PER_RANK = 4
N = 4


class InformativeFor:
    """Rewards 0, 1, 0, 1, ... within the groups of ``uids`` (informative), 0 elsewhere."""

    name = "rule"

    def __init__(self, uids: set[str]) -> None:
        self.uids = uids

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        scores = [float(i % 2) if s.prompt.uid in self.uids else 0.0 for i, s in enumerate(samples)]
        return RewardResult(torch.tensor(scores))

    def onload(self) -> None:
        """No model."""

    def offload(self) -> None:
        """No model."""


def test_ranks_keep_the_fewest_groups_any_rank_kept() -> None:
    rigs = [build_rig("dapo", n=N, max_sampling_rounds=2, seed=0) for _ in range(2)]
    prompts = [
        [rig.cycle.components.prompts[i] for i in range(r * 4, r * 4 + PROMPTS_PER_RANK)]
        for r, rig in enumerate(rigs)
    ]
    # rank 0: every group informative (4 kept in round 1); rank 1: one prompt only, so one
    # group per round, 2 after the round limit
    informative = [{p.uid for p in prompts[0]}, {prompts[1][0].uid}]
    for rig, uids in zip(rigs, informative, strict=True):
        others = [s for s in rig.cycle.maker.reward_sources if s.name != "rule"]  # weight 0
        rig.cycle.maker.reward_sources = [InformativeFor(uids), *others]  # type: ignore[list-item]

    def rank_fn(rank: int) -> Callable[[Callable[[Tensor], Tensor]], object]:
        def run(reduce: Callable[[Tensor], Tensor]) -> object:
            maker = rigs[rank].cycle.maker
            maker.collective = ThreadCollective(rank, 2, reduce)
            with torch.no_grad():
                return maker.make(prompts[rank], seed=5, kl_coef=0.0, moments=RunningMoments())

        return run

    batches = run_on_ranks([rank_fn(0), rank_fn(1)])
    sizes = [len(b.experience) for b in batches]
    assert sizes == [2 * N, 2 * N]
    assert [b.metrics["dynamic_sampling/kept_groups"] for b in batches] == [4.0, 2.0]
    assert [b.metrics["dynamic_sampling/trimmed_groups"] for b in batches] == [2.0, 0.0]
    # rank 0 trains on its first two kept groups, each still informative
    assert [p.uid for p in batches[0].prompts] == [p.uid for p in prompts[0][:2]]
    assert [int(g) for g in batches[0].experience.group_index.unique()] == [0, 1]
    assert float(batches[0].experience.advantages.abs().sum()) > 0
