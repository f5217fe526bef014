"""FakeCollective, FakeAccelerator, InMemoryCheckpointStore and InMemoryTracker."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from lightrft.adapters.fakes import (
    FakeAccelerator,
    FakeCollective,
    InMemoryCheckpointStore,
    InMemoryTracker,
    SimulatedCrash,
)
from lightrft.domain.types import MemoryStats


def test_collective_is_one_rank() -> None:
    collective = FakeCollective()
    x = torch.tensor([1.0, 2.0])
    y = collective.all_reduce_sum(x)
    assert torch.equal(y, x) and y is not x
    y.add_(1)
    assert x.tolist() == [1.0, 2.0]  # the input is not modified
    assert (collective.rank, collective.world_size, collective.all_reduce_calls) == (0, 1, 1)


def test_accelerator_counts_calls() -> None:
    accelerator = FakeAccelerator()
    accelerator.empty_cache()
    accelerator.empty_cache()
    accelerator.synchronize()
    assert accelerator.memory_stats() == MemoryStats(0, 0, 0)
    assert (accelerator.device_type, accelerator.collective_backend) == ("cpu", "gloo")
    assert (accelerator.empty_cache_calls, accelerator.synchronize_calls) == (2, 1)


def test_checkpoint_store_copies_and_prunes() -> None:
    store = InMemoryCheckpointStore(keep_last=2)
    assert store.latest_step() is None
    state: dict[str, Any] = {"weights": torch.zeros(2), "meta": {"step": 1}}
    store.save(1, state)
    state["weights"].add_(5)  # mutating after save does not change the checkpoint
    state["meta"]["step"] = 99
    loaded = store.load(1)
    assert loaded["weights"].tolist() == [0.0, 0.0] and loaded["meta"] == {"step": 1}
    loaded["weights"].add_(1)  # nor does mutating what load returned
    assert store.load(1)["weights"].tolist() == [0.0, 0.0]
    store.save(2, {"x": 2})
    store.save(3, {"x": 3})
    assert store.steps() == [2, 3] and store.latest_step() == 3
    with pytest.raises(KeyError, match="step 1"):
        store.load(1)
    with pytest.raises(ValueError):
        InMemoryCheckpointStore(keep_last=0)


def test_checkpoint_store_crash_leaves_previous_checkpoint() -> None:
    store = InMemoryCheckpointStore()
    store.save(10, {"a": 1, "b": 2})
    store.fail_next_save = True
    with pytest.raises(SimulatedCrash):
        store.save(20, {"a": 3, "b": 4})
    assert store.latest_step() == 10
    assert store.load(10) == {"a": 1, "b": 2}
    assert store.partial == {20: {"a": 3}}  # half of it was written
    with pytest.raises(KeyError):
        store.load(20)
    store.save(20, {"a": 3, "b": 4})  # the switch is one-shot; a retry succeeds
    assert store.latest_step() == 20 and store.partial == {}
    assert (store.saves, store.failed_saves) == (2, 1)


def test_tracker_records_and_closes() -> None:
    tracker = InMemoryTracker()
    tracker.log_metrics({"reward": torch.tensor(0.5), "loss": 1.0}, step=1)  # type: ignore[dict-item]
    tracker.log_metrics({"reward": 0.75}, step=2)
    rows = [{"prompt": "3 4 =", "reward": 1.0}]
    tracker.log_samples(rows, step=2)
    rows[0]["reward"] = 0.0
    assert tracker.series("reward") == [(1, 0.5), (2, 0.75)]
    assert tracker.last("loss") == 1.0
    assert isinstance(tracker.metrics[0][1]["reward"], float)
    assert tracker.samples == [(2, [{"prompt": "3 4 =", "reward": 1.0}])]
    with pytest.raises(KeyError):
        tracker.last("missing")
    tracker.close()
    with pytest.raises(RuntimeError, match="close"):
        tracker.log_metrics({"x": 1.0}, step=3)
