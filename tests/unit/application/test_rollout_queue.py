"""RolloutQueue: batches by step, bounded, every wait with a deadline and a typed error."""

from __future__ import annotations

import threading

import pytest

from lightrft.application.rollout_queue import RolloutQueue, Tagged
from lightrft.domain.async_errors import DeadlineExceededError, ProducerDiedError
from lightrft.domain.staleness import may_start, staleness, steps_to_produce


def test_take_returns_the_batch_of_the_step_asked_for() -> None:
    queue: RolloutQueue[str] = RolloutQueue(2)
    queue.put(Tagged(4, 3, "b4"), timeout_s=1)
    queue.put(Tagged(3, 2, "b3"), timeout_s=1)
    assert queue.waiting() == [(3, 2), (4, 3)]
    assert queue.take(3, timeout_s=1).item == "b3"
    assert queue.take(4, timeout_s=1) == Tagged(4, 3, "b4")
    assert len(queue) == 0 and queue.max_length == 2


def test_a_missing_batch_ends_the_wait_with_a_named_deadline() -> None:
    queue: RolloutQueue[str] = RolloutQueue(1)
    with pytest.raises(DeadlineExceededError, match="batch of step 7") as caught:
        queue.take(7, timeout_s=0.05)
    assert caught.value.seconds >= 0.05
    assert queue.consumer_idle_s == 0.0  # a failed wait is not counted as a served one


def test_a_full_queue_makes_put_wait_then_fail_with_a_deadline() -> None:
    queue: RolloutQueue[str] = RolloutQueue(1)
    queue.put(Tagged(0, 0, "b0"), timeout_s=1)
    with pytest.raises(DeadlineExceededError, match="room in the rollout queue"):
        queue.put(Tagged(1, 0, "b1"), timeout_s=0.05)


def test_a_producer_failure_wakes_the_waiting_trainer() -> None:
    queue: RolloutQueue[str] = RolloutQueue(1)
    cause = OSError("engine gone")
    threading.Timer(0.05, queue.fail, args=(cause, 5)).start()
    with pytest.raises(ProducerDiedError, match="step 5") as caught:
        queue.take(5, timeout_s=10)
    assert caught.value.__cause__ is cause


def test_put_waits_for_room_the_trainer_makes() -> None:
    queue: RolloutQueue[str] = RolloutQueue(1)
    queue.put(Tagged(0, 0, "b0"), timeout_s=1)
    threading.Timer(0.05, queue.take, args=(0, 1)).start()
    queue.put(Tagged(1, 0, "b1"), timeout_s=10)
    assert queue.producer_idle_s > 0
    assert queue.waiting() == [(1, 0)]


def test_the_staleness_bound() -> None:
    # batch 5 may start once the trainer reached step 5 - S
    assert not may_start(5, 3, 1) and may_start(5, 4, 1) and may_start(5, 5, 0)
    assert not may_start(5, 4, 0)
    assert list(steps_to_produce(3, 2, 10)) == [3, 4, 5]
    assert list(steps_to_produce(9, 2, 10)) == [9, 10]  # never past the last step
    assert staleness(7, 5) == 2
    with pytest.raises(ValueError, match="older version"):
        staleness(4, 5)
    with pytest.raises(ValueError, match="max_staleness"):
        may_start(1, 1, -1)


def test_a_closed_queue_frees_a_producer_waiting_for_room() -> None:
    queue: RolloutQueue[str] = RolloutQueue(1)
    queue.put(Tagged(0, 0, "b0"), timeout_s=1)
    threading.Timer(0.05, queue.fail, args=(RuntimeError("closed"), None)).start()
    with pytest.raises(RuntimeError, match="closed"):
        queue.put(Tagged(1, 0, "b1"), timeout_s=10)
