"""Starting the DeepSpeed test workers (``ds_worker.run_rank``) as real processes.

The workers come from a forkserver that imported torch, transformers and the worker module
once; they join a gloo group through ``init_process_group_from_env`` like under torchrun.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import torch

from lightrft.adapters.distributed import free_port
from tests.unit.adapters.deepspeed.ds_worker import Case, run_rank

WORKER_MODULE = "tests.unit.adapters.deepspeed.ds_worker"
JOIN_TIMEOUT_S = 600


def start(cases: Sequence[Case], out: Path, world_size: int = 2) -> list[BaseProcess]:
    """Starts ``world_size`` workers that run every case of ``cases`` into ``out``."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([WORKER_MODULE])
    port = free_port()
    procs = [
        ctx.Process(target=run_rank, args=(rank, world_size, port, list(cases), str(out)))
        for rank in range(world_size)
    ]
    for proc in procs:
        proc.daemon = True
        proc.start()
    return procs


def wait(procs: list[BaseProcess]) -> None:
    """Joins the workers; fails (tracebacks are in the captured stderr) unless all exit 0."""
    for proc in procs:
        proc.join(timeout=JOIN_TIMEOUT_S)
    for proc in procs:
        if proc.is_alive():
            proc.kill()
    codes = [proc.exitcode for proc in procs]
    assert all(code == 0 for code in codes), f"worker exit codes {codes}; see captured stderr"


def load(out: Path, case: Case, world_size: int = 2) -> list[dict[str, Any]]:
    """Every rank's record of ``case`` (written by the test's own workers)."""
    return [
        torch.load(out / case.name / f"rank{r}.pt", weights_only=False) for r in range(world_size)
    ]
