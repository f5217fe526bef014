"""The split placement with a producer thread (the engine here is an in-process fake: the
process engine has its own tests): staleness 0 equals the synchronous cycle bitwise, the
bound holds, a failing producer or a missed deadline stops the run with a checkpoint, a
stalled producer does not hold the run's end, partial rollouts load newer weights
mid-generation."""

from __future__ import annotations

import time

import pytest
import torch

from lightrft.adapters.fakes import FakeRolloutEngine
from lightrft.application.off_policy_params import OffPolicyParams
from lightrft.application.rollout_producer import ThreadedRolloutFeed
from lightrft.application.split_placement import split_feed
from lightrft.domain.async_errors import DeadlineExceededError, ProducerDiedError
from lightrft.domain.partial_rollout import ChunkProgress
from tests.helpers.off_policy_rig import (
    STEPS,
    FailingEngine,
    comparable,
    off_policy_rig,
    policy_weights,
    run_recording_versions,
)


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


def test_a_stalled_producer_does_not_hold_the_end_of_a_run() -> None:
    off = OffPolicyParams(mode="one_step_off", max_staleness=1, shutdown_timeout_s=0.3)
    engine = FailingEngine(at=2, stall_s=20.0)  # batch 1, generated during step 0, stalls
    rig = off_policy_rig(feed=split_feed(engine), off_policy_params=off)
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError, match="producer thread to stop") as caught:
        rig.cycle.run(max_steps=1)
    assert time.monotonic() - started < 10  # not the 20 s stall
    assert "generating the batch of step 1 with policy version 0" in str(caught.value)


def test_an_error_stops_a_stalled_producer_and_stays_the_error_raised() -> None:
    off = OffPolicyParams(
        mode="async", max_staleness=0, queue_timeout_s=0.5, shutdown_timeout_s=0.3
    )
    rig = off_policy_rig(feed=split_feed(FailingEngine(at=2, stall_s=20.0)), off_policy_params=off)
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError, match="batch of step 1") as caught:
        rig.cycle.run()
    assert time.monotonic() - started < 10
    assert any("producer thread to stop" in note for note in caught.value.__notes__)
    assert rig.checkpoints.steps() == [1]


class SlowChunks(FakeRolloutEngine):
    """Takes ``delay_s`` per chunk of a partial rollout (the trainer finishes first)."""

    def __init__(self, delay_s: float) -> None:
        super().__init__(seed=1)
        self.delay_s = delay_s

    def continue_generation(self, max_new_tokens: int) -> ChunkProgress:
        time.sleep(self.delay_s)
        return super().continue_generation(max_new_tokens)


def test_partial_rollouts_continue_a_batch_with_the_weights_published_meanwhile() -> None:
    off = OffPolicyParams(
        mode="one_step_off",
        max_staleness=1,
        placement="split",
        partial_rollouts=True,
        partial_chunk_tokens=1,
    )
    engine = SlowChunks(delay_s=0.4)
    rig = off_policy_rig(feed=split_feed(engine), off_policy_params=off)
    history = rig.cycle.run()
    first, *later = history
    # batch 0 is generated and trained by version 0
    assert first["async/staleness_max"] == 0.0 and first["async/multi_version_fraction"] == 0.0
    # batches 1, 2 start with the version of the step before; while they generate (0.4 s a
    # token) the trainer finishes its step, publishes, and the rest of the batch is
    # generated with the new version (verified sync): token staleness between 0 and 1
    assert [row["async/mid_generation_weight_loads"] for row in later] == [1.0, 1.0]
    for row in later:
        assert 0.0 < row["async/staleness_mean"] < 1.0 and row["async/staleness_max"] == 1.0
        assert row["async/multi_version_fraction"] > 0.0
    assert engine.weight_syncs == 3  # version 0, then 1 and 2 in the middle of a batch


@pytest.mark.slow
def test_a_split_resume_drops_the_batch_generated_ahead_and_counts_it() -> None:
    first = off_policy_rig("one_step_off", 1, feed=split_feed(FakeRolloutEngine(seed=1)))
    feed = first.cycle.feed
    assert isinstance(feed, ThreadedRolloutFeed)

    def save_once_batch_2_is_queued() -> bool:
        if first.cycle.state.step < 2:
            return False
        deadline = time.monotonic() + 30
        while feed.in_flight() != [(2, 1)] and time.monotonic() < deadline:
            time.sleep(0.01)
        first.cycle.save_checkpoint()  # batch 2 (from version 1) is waiting in the queue
        return True

    first.cycle.run(should_stop=save_once_batch_2_is_queued)
    assert first.checkpoints.load(2)["async_in_flight"] == [[2, 1]]
    second = off_policy_rig(
        "one_step_off",
        1,
        feed=split_feed(FakeRolloutEngine(seed=1)),
        checkpoints=first.checkpoints,
    )
    history = second.cycle.run()
    assert [row["async/dropped_on_resume"] for row in history] == [1.0]
    assert history[0]["async/staleness_max"] == 0.0  # regenerated with the restored policy
    assert second.cycle.state.step == STEPS
