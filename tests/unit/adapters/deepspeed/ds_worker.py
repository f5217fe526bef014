"""One rank of the DeepSpeed tests, run by ``run_rank`` in a fresh process.

For each :class:`Case` (ZeRO stage, bf16, ZeRO-Offload) asked for: trains ``STEPS`` steps (each rank half of every global
batch, in micro-batches of MICRO rows) with an offload/onload round trip, a step skipped on
one rank's request and one skipped for a NaN gradient; before step ``CKPT_AT`` it writes a
DeepSpeed checkpoint and saves ``state_dict()`` with ``torch.save``. Then the final full
state, an HF export (rank 0), and two resumes: a differently initialized model that loads
the checkpoint, and one that loads the saved state dict (``weights_only=True``); both train
the remaining steps. Results land in OUT/<case name>/ as ``rank<r>.pt`` (and ``export/``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import torch

from lightrft.adapters.accelerators import CpuAccelerator
from lightrft.adapters.deepspeed import DeepSpeedStrategy
from lightrft.adapters.distributed import (
    TorchCollective,
    init_process_group_from_env,
    is_main_process,
    shutdown_process_group,
)
from lightrft.domain.types import StepResult
from tests.helpers.sharded_case import backward_batch
from tests.unit.adapters.deepspeed.ds_case import (
    CKPT_AT,
    EXTRA_CONFIG,
    OPTIM,
    STEPS,
    tiny_model,
)


class Case(NamedTuple):
    """One strategy configuration under test."""

    zero_stage: int
    bf16: bool = False
    cpu_offload: bool = False

    @property
    def name(self) -> str:
        flags = ("-bf16" if self.bf16 else "") + ("-offload" if self.cpu_offload else "")
        return f"zero{self.zero_stage}{flags}"


def new_strategy(case: Case, seed: int) -> DeepSpeedStrategy:
    strategy = DeepSpeedStrategy(
        OPTIM,
        device=torch.device("cpu"),
        zero_stage=case.zero_stage,
        bf16=case.bf16,
        cpu_offload=case.cpu_offload,
        extra_config=EXTRA_CONFIG,
    )
    strategy.prepare(tiny_model(seed))
    return strategy


def local_numels(strategy: DeepSpeedStrategy) -> int:
    """Elements of the module's own parameter tensors on this rank (0 when partitioned)."""
    return sum(p.data.numel() for p in strategy.module.parameters())


def train(out: Path, case: Case, coll: TorchCollective) -> dict[str, Any]:
    strategy = new_strategy(case, seed=0)
    results: list[StepResult] = []
    extra: dict[str, StepResult] = {}
    extra_checks: dict[str, str] = {}
    for step in range(STEPS):
        if step == CKPT_AT:
            strategy.save_checkpoint(out / "ckpt")
            torch.save(strategy.state_dict(), out / f"state_rank{coll.rank}.pt")
        if step == 1:
            strategy.offload()
            try:
                strategy.step()
                extra_checks["step_while_offloaded"] = "allowed"
            except RuntimeError as error:
                extra_checks["step_while_offloaded"] = str(error)
            strategy.onload()
        if step == 2:  # one rank asks to skip: both skip, nothing changes
            backward_batch(strategy, coll, step, 1.0)
            extra["requested"] = strategy.step(skip_reason="test" if coll.rank == 1 else None)
        if step == 3:  # NaN gradients everywhere: skipped for the norm
            backward_batch(strategy, coll, step, float("nan"))
            extra["nan"] = strategy.step()
        backward_batch(strategy, coll, step, 1.0)
        results.append(strategy.step())
    export = strategy.export_full_state_dict()
    if is_main_process():
        plain = tiny_model(0)
        plain.load_state_dict(export)
        plain.save_pretrained(out / "export")
    return {
        "results": results,
        "skips": extra,
        "final": {name: t.clone() for name, t in strategy.full_state()},
        "local_numels": local_numels(strategy),
        "export_keys": sorted(export),
        "param_dtypes": sorted({str(p.dtype) for p in strategy.module.parameters()}),
        **extra_checks,
    }


def resume(out: Path, case: Case, coll: TorchCollective, source: str) -> dict[str, Any]:
    strategy = new_strategy(case, seed=1)
    if source == "checkpoint":
        strategy.load_checkpoint(out / "ckpt")
    else:
        state = torch.load(out / f"state_rank{coll.rank}.pt", weights_only=True)
        strategy.load_state_dict(state)
    results = []
    for step in range(CKPT_AT, STEPS):
        backward_batch(strategy, coll, step, 1.0)
        results.append(strategy.step())
    return {"results": results, "final": {name: t.clone() for name, t in strategy.full_state()}}


def skip_cpu_shm_comm_build() -> None:
    """Makes DeepSpeed's CPU backend use plain gloo collectives.

    Otherwise its first process group on a machine JIT-compiles a shared-memory all-reduce
    kernel (about 100 s on 2 cores; cached in TORCH_EXTENSIONS_DIR). That kernel is a
    CPU-only speed-up, never used on GPUs; the strategy does not depend on it.
    """
    import deepspeed.ops

    deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False


def run_rank(rank: int, world_size: int, port: int, cases: Sequence[Case], out: str) -> None:
    """Entry of a worker process: the launcher's variables, then every case in turn."""
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    torch.set_num_threads(1)
    skip_cpu_shm_comm_build()
    init_process_group_from_env(CpuAccelerator())
    coll = TorchCollective()
    for case in cases:
        case_out = Path(out) / case.name
        case_out.mkdir(parents=True, exist_ok=True)
        record = {
            "train": train(case_out, case, coll),
            "resume_checkpoint": resume(case_out, case, coll, "checkpoint"),
            "resume_state_dict": resume(case_out, case, coll, "state_dict"),
        }
        torch.save(record, case_out / f"rank{coll.rank}.pt")
    shutdown_process_group()
