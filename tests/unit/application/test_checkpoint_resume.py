"""Choosing the resume checkpoint: newest intact one, agreed by every (simulated) rank."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from structlog.testing import capture_logs

from lightrft.adapters.checkpoint import LocalCheckpointStore
from lightrft.adapters.fakes import FakeCollective, InMemoryCheckpointStore
from lightrft.application.checkpoint_resume import load_newest_intact
from lightrft.domain.checkpoint_health import NoIntactCheckpointError
from tests.helpers.simulated_ranks import run_on_ranks


@dataclass
class RankCollective:
    rank: int
    world_size: int
    all_reduce_sum: Callable[[torch.Tensor], torch.Tensor]


def _stores(tmp_path: Path, steps_by_rank: list[tuple[int, ...]]) -> list[LocalCheckpointStore]:
    stores = []
    for rank, steps in enumerate(steps_by_rank):
        store = LocalCheckpointStore(tmp_path / f"rank_{rank:05d}", keep_last=None)
        for step in steps:
            store.save(step, {"rank": rank, "step": step})
        stores.append(store)
    return stores


def _resume_all(stores: list[LocalCheckpointStore]) -> list[int | None]:
    def on_rank(rank: int) -> Callable[[Callable[[torch.Tensor], torch.Tensor]], int | None]:
        def run(reduce: Callable[[torch.Tensor], torch.Tensor]) -> int | None:
            found = load_newest_intact(stores[rank], RankCollective(rank, len(stores), reduce))
            if found is None:
                return None
            step, state = found
            assert state == {"rank": rank, "step": step}  # each rank loads its own shard
            return step

        return run

    return run_on_ranks([on_rank(r) for r in range(len(stores))])


def _truncate(store: LocalCheckpointStore, step: int) -> None:
    path = store.directory(step) / "state.pt"
    path.write_bytes(path.read_bytes()[:10])


def test_a_step_damaged_on_one_rank_is_skipped_by_all(tmp_path: Path) -> None:
    stores = _stores(tmp_path, [(2, 4, 6), (2, 4, 6)])
    _truncate(stores[1], 6)
    assert _resume_all(stores) == [4, 4]


def test_only_steps_every_rank_holds_are_candidates(tmp_path: Path) -> None:
    stores = _stores(tmp_path, [(2, 4, 6), (2, 4)])  # rank 1 was killed before step 6
    assert _resume_all(stores) == [4, 4]
    assert _resume_all(_stores(tmp_path / "none", [(), ()])) == [None, None]


def test_one_rank_only_store_prefers_the_newest_intact(tmp_path: Path) -> None:
    (store,) = _stores(tmp_path, [(1, 2, 3)])
    _truncate(store, 3)
    step, state = load_newest_intact(store, FakeCollective())  # type: ignore[misc]
    assert step == 2 and state["step"] == 2
    _truncate(store, 2)
    _truncate(store, 1)
    with pytest.raises(NoIntactCheckpointError, match="(?s)step 3: .*step 2: .*step 1: "):
        load_newest_intact(store, FakeCollective())


def test_stores_without_verification_load_the_newest() -> None:
    store = InMemoryCheckpointStore()
    assert load_newest_intact(store, FakeCollective()) is None
    store.save(1, {"a": 1})
    store.save(5, {"a": 5})
    assert load_newest_intact(store, FakeCollective()) == (5, {"a": 5})


def test_a_newest_checkpoint_without_its_state_file_is_skipped_with_one_warning(
    tmp_path: Path,
) -> None:
    (store,) = _stores(tmp_path, [(1, 2)])
    state = store.directory(2) / "state.pt"
    state.unlink()
    with capture_logs() as logs:
        step, _ = load_newest_intact(store, FakeCollective())  # type: ignore[misc]
    assert step == 1
    (warning,) = [e for e in logs if e["log_level"] == "warning"]
    assert warning["event"] == "checkpoint.damaged" and warning["step"] == 2
    assert warning["problems"] == [f"{state}: missing"]
    assert warning["skipped"] is True and warning["falls_back_to"] == 1
