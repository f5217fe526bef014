"""What a run writes: its tracker (``logging.trackers``, rank 0 only) and its checkpoint store
(``RUN_DIR/checkpoints``, one directory per rank when there are several)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lightrft.adapters.checkpoint import LocalCheckpointStore
from lightrft.adapters.tracking import NullTracker, make_tracker
from lightrft.domain.ports import CheckpointStore, Tracker
from lightrft.entrypoints.config import RunConfig


def build_tracker(config: RunConfig, rank: int) -> Tracker:
    """The configured trackers on rank 0; a tracker recording nothing on the other ranks."""
    if rank != 0:
        return NullTracker()
    opts: dict[str, Any] = {}
    if "wandb" in config.logging.trackers:
        opts["wandb"] = {"project": config.logging.wandb_project}
    return make_tracker(list(config.logging.trackers), Path(config.logging.run_dir), **opts)


def build_checkpoints(config: RunConfig, rank: int, world_size: int) -> CheckpointStore:
    """The store of this rank's checkpoints under ``RUN_DIR/checkpoints``."""
    root = Path(config.logging.run_dir) / "checkpoints"
    if world_size > 1:
        root = root / f"rank_{rank:05d}"  # every rank keeps its own shard of the run state
    return LocalCheckpointStore(root, keep_last=config.checkpoint.keep_last)
