"""The step's metrics (speed, async, the mean over ranks) and its prompt schedule."""

from __future__ import annotations

import torch
from torch import Tensor

from lightrft.adapters.fakes import FakeCollective, synthetic_prompts
from lightrft.application.data_schedule import epoch_permutation
from lightrft.application.params import CycleParams, RolloutParams
from lightrft.application.phases import PhaseSwitcher
from lightrft.application.rollout_feed import RolloutFeed
from lightrft.application.stages.experience_batch import experience_batch
from lightrft.application.stages.records import ExperienceBatch
from lightrft.application.step_metrics import StepMetrics, mean_over_ranks
from lightrft.application.step_prompts import StepPrompts
from tests.helpers.stage_work import work


class TwoRanks(FakeCollective):
    """Rank 0 of 2; the other rank holds ``other`` in every entry of a reduction."""

    def __init__(self, other: float) -> None:
        super().__init__()
        self.other = other

    @property
    def world_size(self) -> int:
        return 2

    def all_reduce_sum(self, tensor: Tensor) -> Tensor:
        return tensor + self.other


class Feed:
    """A feed whose step metrics are fixed."""

    def step_metrics(self) -> dict[str, float]:
        return {"async/staleness": 1.0}


def _batch() -> ExperienceBatch:
    record = work([1.0, 0.0, 0.0, 0.0])
    record.advantages = record.returns = torch.zeros(4, 4)
    return experience_batch(record)


def _metrics(asynchronous: bool, ticks: list[float]) -> tuple[StepMetrics, PhaseSwitcher]:
    phases = PhaseSwitcher({}, clock=iter(ticks).__next__)
    feed: RolloutFeed = Feed()  # type: ignore[assignment]
    return StepMetrics(phases, feed, FakeCollective(), asynchronous=asynchronous), phases


def test_speed_divides_the_tokens_by_the_phase_and_step_times() -> None:
    metrics, phases = _metrics(False, [0.0, 2.0])
    with phases.phase("rollout"):
        pass
    batch = _batch()
    got = metrics.complete({"train/loss": 1.0}, batch, elapsed=4.0)
    tokens = sum(
        len(batch.prompts[c.prompt_index].prompt_token_ids) + len(c.token_ids)
        for c in batch.completions
    )
    assert got["time/rollout_s"] == 2.0 and got["time/step_s"] == 4.0
    assert got["throughput/generated_tokens_per_s"] == 16 / 2.0  # 4 samples x 4 tokens
    assert got["throughput/tokens_per_s"] == tokens / 4.0
    assert not any(key.startswith("async/") for key in got)


def test_async_metrics_carry_the_dropped_batches_once() -> None:
    metrics, _ = _metrics(True, [])
    metrics.dropped_on_resume = 2
    first = metrics.complete({}, _batch(), elapsed=1.0)
    second = metrics.complete({}, _batch(), elapsed=1.0)
    assert first["async/staleness"] == 1.0 and first["async/dropped_on_resume"] == 2.0
    assert second["async/dropped_on_resume"] == 0.0


def test_the_mean_over_ranks_averages_every_key() -> None:
    got = mean_over_ranks({"b": 1.0, "a": 3.0}, TwoRanks(other=5.0))
    assert got == {"a": 4.0, "b": 3.0}
    assert mean_over_ranks({"a": 1.0}, FakeCollective()) == {"a": 1.0}


def test_the_schedule_walks_the_dataset_and_seeds_each_step() -> None:
    prompts = synthetic_prompts(8, seed=0)
    schedule = StepPrompts(
        prompts,
        FakeCollective(),
        RolloutParams(prompts_per_step=3),
        CycleParams(seed=2, shuffle_prompts=False),
    )
    step0, balance = schedule(0)
    step2, _ = schedule(2)
    assert [p.uid for p in step0] == [prompts[i].uid for i in (0, 1, 2)] and balance == {}
    assert [p.uid for p in step2] == [prompts[i].uid for i in (6, 7, 0)]  # wraps to epoch 1
    assert schedule.seed(5) == 2 * 1_000_003 + 5


def test_balanced_ranks_report_the_imbalance() -> None:
    collective = TwoRanks(other=0.0)
    schedule = StepPrompts(
        synthetic_prompts(8, seed=0),
        collective,
        RolloutParams(prompts_per_step=2, balance_ranks=True),
        CycleParams(seed=0),
    )
    chosen, balance = schedule(0)
    assert len(chosen) == 2
    assert set(balance) == {"balance/imbalance_before", "balance/imbalance_after"}
    assert balance["balance/imbalance_after"] <= balance["balance/imbalance_before"] + 1e-12
    prompts = schedule.prompts
    step_uids = {prompts[i].uid for i in epoch_permutation(8, 0, 0)[:4]}  # both ranks' 4
    assert {p.uid for p in chosen} <= step_uids
