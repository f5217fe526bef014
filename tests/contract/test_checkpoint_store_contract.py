"""Contract of the ``CheckpointStore`` port. Append real stores to ``IMPLEMENTATIONS``.

A factory takes ``(tmp_path, keep_last)`` and returns a :class:`StoreSubject`: the store
and a function that makes its next ``save`` crash half-way (raising ``crash_error``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from lightrft.adapters.fakes import InMemoryCheckpointStore, SimulatedCrash
from lightrft.domain.ports import CheckpointStore


@dataclass
class StoreSubject:
    store: CheckpointStore
    crash_next_save: Callable[[], None]
    crash_error: type[BaseException]


def make_in_memory_store(_tmp_path: Path, keep_last: int | None) -> StoreSubject:
    store = InMemoryCheckpointStore(keep_last=keep_last)

    def crash() -> None:
        store.fail_next_save = True

    return StoreSubject(store, crash, SimulatedCrash)


IMPLEMENTATIONS: list[object] = [pytest.param(make_in_memory_store, id="in-memory")]
StoreFactory = Callable[[Path, "int | None"], StoreSubject]


@pytest.fixture(params=IMPLEMENTATIONS)
def factory(request: pytest.FixtureRequest) -> StoreFactory:
    return request.param  # type: ignore[no-any-return]


def _state(value: float) -> dict[str, object]:
    return {
        "model": {"w": torch.full((2, 3), value)},
        "optimizer": {"step": int(value), "lr": 0.1},
        "data": {"position": 7},
    }


def _assert_state(loaded: dict[str, object], value: float) -> None:
    model = loaded["model"]
    assert isinstance(model, dict)
    torch.testing.assert_close(model["w"], torch.full((2, 3), value))
    assert loaded["optimizer"] == {"step": int(value), "lr": 0.1}
    assert loaded["data"] == {"position": 7}


def test_save_latest_load(factory: StoreFactory, tmp_path: Path) -> None:
    store = factory(tmp_path, None).store
    assert isinstance(store, CheckpointStore)
    assert store.latest_step() is None
    state = _state(1.0)
    store.save(5, state)
    state["model"]["w"].add_(100)  # type: ignore[index]
    store.save(9, _state(2.0))
    assert store.latest_step() == 9
    _assert_state(store.load(5), 1.0)
    _assert_state(store.load(9), 2.0)


def test_keep_last_prunes_oldest(factory: StoreFactory, tmp_path: Path) -> None:
    store = factory(tmp_path, 2).store
    for step in (1, 2, 3):
        store.save(step, _state(float(step)))
    assert store.latest_step() == 3
    _assert_state(store.load(2), 2.0)
    with pytest.raises((KeyError, FileNotFoundError)):
        store.load(1)


def test_crash_mid_save_keeps_previous_checkpoint(factory: StoreFactory, tmp_path: Path) -> None:
    subject = factory(tmp_path, 1)
    subject.store.save(1, _state(1.0))
    subject.crash_next_save()
    with pytest.raises(subject.crash_error):
        subject.store.save(2, _state(2.0))
    assert subject.store.latest_step() == 1
    _assert_state(subject.store.load(1), 1.0)
    with pytest.raises((KeyError, FileNotFoundError)):
        subject.store.load(2)
