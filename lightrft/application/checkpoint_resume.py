"""Choosing the checkpoint to resume from: the newest one that is intact on every rank.

A store that records checksums (:class:`~lightrft.domain.checkpoint_health.VerifiableStore`)
has each candidate verified before it is loaded; a candidate that fails verification or
loading is logged once (``checkpoint.damaged``, naming the file, ``skipped=True`` and the
step it ``falls_back_to``) and the next older one is tried.
With several data-parallel ranks (each with its own store of its shard) the candidates are
the steps every rank holds, and a step is used only if it is intact on all of them, so every
rank resumes from the same step.
"""

from __future__ import annotations

from typing import Any

import structlog
import torch

from lightrft.domain.checkpoint_health import (
    DamagedCheckpointError,
    NoIntactCheckpointError,
    VerifiableStore,
)
from lightrft.domain.ports import CheckpointStore, Collective

log = structlog.get_logger(__name__)


def load_newest_intact(
    store: CheckpointStore, collective: Collective | None = None
) -> tuple[int, dict[str, Any]] | None:
    """``(step, state)`` of the newest checkpoint intact on every rank (``collective`` None:
    one process); ``None`` when there is no checkpoint at all. Raises
    :class:`NoIntactCheckpointError` when all are damaged."""
    candidates = _common_steps(sorted(store.steps()), collective)
    if not candidates:
        return None
    damaged: list[str] = []
    for step in reversed(candidates):
        state, problems = _try_load(store, step)
        if _any_rank(bool(problems), collective):
            damaged.append(f"step {step}: " + ("; ".join(problems) or "damaged on another rank"))
            older = [s for s in candidates if s < step]
            log.warning(
                "checkpoint.damaged",
                step=step,
                problems=problems or ["damaged on another rank"],
                skipped=True,
                falls_back_to=older[-1] if older else None,
            )
            continue
        assert state is not None
        return step, state
    raise NoIntactCheckpointError(
        "every checkpoint is damaged, nothing to resume from:\n  " + "\n  ".join(damaged)
    )


def load_intact(store: CheckpointStore, step: int) -> dict[str, Any]:
    """The state of ``step`` after the checks a resume makes (checksums, then safe
    loading); raises :class:`DamagedCheckpointError` naming each damaged file otherwise.
    What ``lightrft checkpoints export`` reads a checkpoint with."""
    state, problems = _try_load(store, step)
    if problems:
        raise DamagedCheckpointError(
            f"the checkpoint of step {step} is damaged, it is not used: " + "; ".join(problems)
        )
    assert state is not None
    return state


def _try_load(store: CheckpointStore, step: int) -> tuple[dict[str, Any] | None, list[str]]:
    """The state of ``step`` and no problems, or ``None`` and what is wrong with it."""
    if isinstance(store, VerifiableStore):
        problems = store.verify(step)
        if problems:
            return None, problems
    try:
        return store.load(step), []
    except DamagedCheckpointError as error:
        return None, [str(error)]


def _any_rank(flag: bool, collective: Collective | None) -> bool:
    if collective is None or collective.world_size == 1:
        return flag
    return bool(collective.all_reduce_sum(torch.tensor([float(flag)], dtype=torch.float64)) > 0)


def _common_steps(steps: list[int], collective: Collective | None) -> list[int]:
    """The steps present on every rank, ascending (an all-gather made of two all-reduces)."""
    if collective is None or collective.world_size == 1:
        return steps
    world, rank = collective.world_size, collective.rank
    counts = torch.zeros(world, dtype=torch.float64)
    counts[rank] = len(steps)
    counts = collective.all_reduce_sum(counts)
    sizes = [int(c) for c in counts.tolist()]
    gathered = torch.zeros(sum(sizes), dtype=torch.float64)  # exact for steps < 2**53
    offset = sum(sizes[:rank])
    gathered[offset : offset + len(steps)] = torch.tensor(steps, dtype=torch.float64)
    gathered = collective.all_reduce_sum(gathered)
    common = set(steps)
    start = 0
    for size in sizes:
        common &= {int(v) for v in gathered[start : start + size].tolist()}
        start += size
    return sorted(common)
