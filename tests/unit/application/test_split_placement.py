"""The split placement with a producer thread (the engine here is an in-process fake: the
process engine has its own tests): staleness 0 equals the synchronous cycle bitwise, the
bound holds, a failing producer or a missed deadline stops the run with a checkpoint."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest
import torch

from lightrft.adapters.fakes import FakeRolloutEngine
from lightrft.application.off_policy_params import OffPolicyParams
from lightrft.application.rollout_producer import ThreadedRolloutFeed
from lightrft.application.split_placement import split_feed
from lightrft.domain.async_errors import DeadlineExceededError, ProducerDiedError
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from tests.helpers.off_policy_rig import (
    STEPS,
    comparable,
    off_policy_rig,
    policy_weights,
    run_recording_versions,
)


class FailingEngine(FakeRolloutEngine):
    """Fails (or stalls ``stall_s``) at generate call number ``at`` (1-based)."""

    def __init__(self, at: int, stall_s: float = 0.0) -> None:
        super().__init__(seed=1)
        self.at, self.stall_s = at, stall_s

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        if self.generate_calls + 1 == self.at:
            if not self.stall_s:
                raise OSError("the engine's device fell off the bus")
            time.sleep(self.stall_s)
        return super().generate(prompts, sampling)


def test_split_staleness_zero_equals_the_synchronous_cycle_bitwise() -> None:
    sync = off_policy_rig()
    remote = FakeRolloutEngine(seed=1)
    split = off_policy_rig("async", 0, feed=split_feed(remote))
    assert run_recording_versions(sync) == run_recording_versions(split)
    assert comparable(sync.cycle.history) == comparable(split.cycle.history)
    for name, tensor in policy_weights(sync).items():
        assert torch.equal(tensor, policy_weights(split)[name]), name
    assert remote.generate_calls == STEPS and split.engine.generate_calls == 0
    assert [row["async/staleness_max"] for row in split.cycle.history] == [0.0] * STEPS


@pytest.mark.slow
def test_split_one_step_off_trains_one_version_behind() -> None:
    rig = off_policy_rig("one_step_off", 1, feed=split_feed(FakeRolloutEngine(seed=1)))
    history = rig.cycle.run()
    lags = [row["async/staleness_max"] for row in history]
    assert lags[0] == 0.0 and all(lag <= 1.0 for lag in lags) and 1.0 in lags
    assert all(row["async/queue_max_length"] <= 2 for row in history)


def test_a_failing_producer_stops_the_run_with_a_checkpoint() -> None:
    rig = off_policy_rig("one_step_off", 1, feed=split_feed(FailingEngine(at=3)))
    with pytest.raises(ProducerDiedError, match="step 2") as caught:
        rig.cycle.run()
    assert isinstance(caught.value.__cause__, OSError)
    assert rig.checkpoints.steps() == [2]  # the state before the step that had no batch


def test_a_stalled_producer_ends_in_a_named_deadline() -> None:
    off = OffPolicyParams(mode="async", max_staleness=0, queue_timeout_s=0.5)
    engine = FailingEngine(at=2, stall_s=3.0)
    rig = off_policy_rig(feed=split_feed(engine), off_policy_params=off)
    with pytest.raises(DeadlineExceededError, match="batch of step 1"):
        rig.cycle.run()
    assert rig.checkpoints.steps() == [1]


def test_a_run_cut_short_stops_a_producer_blocked_on_a_full_queue() -> None:
    rig = off_policy_rig("async", 2, feed=split_feed(FakeRolloutEngine(seed=1)))
    started = time.monotonic()
    rig.cycle.run(max_steps=1)  # the producer fills the queue ahead, then must stop
    assert time.monotonic() - started < 60
    assert rig.cycle.state.step == 1
    assert isinstance(rig.cycle.feed, ThreadedRolloutFeed) and not rig.cycle.feed.running
