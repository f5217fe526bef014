"""Contract of the ``CheckpointStore`` port. Append real stores to ``IMPLEMENTATIONS``.

A factory takes ``(tmp_path, keep_last)`` and returns a :class:`StoreSubject`: the store,
a function that makes its next ``save`` crash half-way (raising ``crash_error``) and one
that undoes whatever arming the crash installed (called after the crash test).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import torch

from lightrft.adapters.checkpoint import LocalCheckpointStore
from lightrft.adapters.fakes import InMemoryCheckpointStore, SimulatedCrash
from lightrft.domain.ports import CheckpointStore


@dataclass
class StoreSubject:
    store: CheckpointStore
    crash_next_save: Callable[[], None]
    crash_error: type[BaseException]
    disarm: Callable[[], None] = lambda: None


def make_in_memory_store(_tmp_path: Path, keep_last: int | None) -> StoreSubject:
    store = InMemoryCheckpointStore(keep_last=keep_last)

    def crash() -> None:
        store.fail_next_save = True

    return StoreSubject(store, crash, SimulatedCrash)


class CommitCrash(RuntimeError):
    """Raised in place of the rename that would publish a local checkpoint."""


class _CrashAtCommit:
    """Arms a one-shot crash of ``store``'s committing rename (``os.rename`` to ``step_*``)."""

    def __init__(self, store: LocalCheckpointStore) -> None:
        self._store = store
        self._real_rename = os.rename
        self._patch = mock.patch(
            "lightrft.adapters.checkpoint.local_store.os.rename", self._rename_or_crash
        )
        self._armed = False

    def arm(self) -> None:
        self._patch.start()
        self._armed = True

    def disarm(self) -> None:
        if self._armed:
            self._patch.stop()
            self._armed = False

    def _rename_or_crash(self, src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        target = Path(dst)
        if target.parent == self._store.root and target.name.startswith("step_"):
            self.disarm()  # one crash only
            raise CommitCrash(f"simulated crash before renaming {src} to {dst}")
        self._real_rename(src, dst, *args, **kwargs)


def make_local_store(tmp_path: Path, keep_last: int | None) -> StoreSubject:
    """The crash strikes when everything is written and fsynced, at the committing rename."""
    store = LocalCheckpointStore(tmp_path / "ckpt", keep_last=keep_last)
    crash = _CrashAtCommit(store)
    return StoreSubject(store, crash.arm, CommitCrash, crash.disarm)


IMPLEMENTATIONS: list[object] = [
    pytest.param(make_in_memory_store, id="in-memory"),
    pytest.param(make_local_store, id="local"),
]
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
    try:
        with pytest.raises(subject.crash_error):
            subject.store.save(2, _state(2.0))
    finally:
        subject.disarm()
    assert subject.store.latest_step() == 1
    _assert_state(subject.store.load(1), 1.0)
    with pytest.raises((KeyError, FileNotFoundError)):
        subject.store.load(2)
    subject.store.save(3, _state(3.0))  # the store goes on after the crash
    assert subject.store.latest_step() == 3
    _assert_state(subject.store.load(3), 3.0)
    with pytest.raises((KeyError, FileNotFoundError)):
        subject.store.load(1)
