"""The state of every checkpoint of a run: what ``lightrft checkpoints verify`` prints.

A run keeps its checkpoints in ``RUN_DIR/checkpoints`` (one store) or, with several ranks,
in ``RUN_DIR/checkpoints/rank_XXXXX`` (one store per rank, each holding its shard).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch

from lightrft.adapters.checkpoint.local_store import (
    STATE_FILE,
    TMP_PREFIX,
    LocalCheckpointStore,
    read_state,
)
from lightrft.domain.checkpoint_health import DamagedCheckpointError

Status = Literal["intact", "damaged", "unverified", "incomplete"]


@dataclass(frozen=True)
class CheckpointReport:
    """One checkpoint directory and what was found.

    ``intact``: sizes and checksums match and the state loads as a resume loads it (safe
    loading); ``unverified``: saved without checksums (older
    version) but its state loads; ``damaged``: see ``problems`` (a file missing, truncated,
    changed or refused by safe loading; ``state.pt`` or ``metadata.json`` gone included);
    ``incomplete``: a save that never committed (ignored by resume, removed by the next save).
    """

    directory: Path
    step: int | None
    status: Status
    problems: tuple[str, ...] = ()


def checkpoint_stores(checkpoints: Path) -> list[Path]:
    """The store directories of a run's ``checkpoints`` directory (per-rank ones if any)."""
    ranks = sorted(p for p in checkpoints.glob("rank_*") if p.is_dir())
    return ranks or [checkpoints]


def inspect_store(root: Path) -> list[CheckpointReport]:
    """Reports of every checkpoint (and interrupted save) in one store, oldest first."""
    store = LocalCheckpointStore(root, keep_last=None)
    reports = [_inspect(store, step) for step in store.steps()]
    if root.is_dir():
        reports += [
            CheckpointReport(entry, None, "incomplete")
            for entry in sorted(root.iterdir())
            if entry.name.startswith(TMP_PREFIX) and entry.is_dir()
        ]
    return reports


def _inspect(store: LocalCheckpointStore, step: int) -> CheckpointReport:
    directory = store.directory(step)
    problems = checkpoint_problems(store, step)
    if problems:
        return CheckpointReport(directory, step, "damaged", tuple(problems))
    status: Status = "intact" if "files" in store.metadata(step) else "unverified"
    return CheckpointReport(directory, step, status)


def checkpoint_problems(store: LocalCheckpointStore, step: int) -> list[str]:
    """What a resume would refuse in the checkpoint of ``step``: files missing, truncated
    or changed since the save (the recorded checksums), then a state that safe loading
    (``weights_only``, as :meth:`LocalCheckpointStore.load`) refuses or cannot read, checked
    memory-mapped so the tensor data is not read twice. Empty when a resume would load it."""
    problems = store.verify(step)
    if problems:
        return problems
    try:
        read_state(store.directory(step) / STATE_FILE, torch.device("cpu"), mmap=True)
    except DamagedCheckpointError as error:
        return [str(error)]
    return []
