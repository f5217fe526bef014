"""One rank of the FSDP2 tests: ``run_rank`` in a fresh process (the tests), or
``torchrun --nproc-per-node 2 fsdp_worker.py MODE OUT`` by hand.

MODE ``train``: trains ``STEPS`` steps (each rank half of every global batch, two
micro-batches), with an offload/onload round trip, a step skipped on one rank's request and
one skipped for a NaN gradient, writes a sharded checkpoint before step ``CKPT_AT``, then
the final full state, gather checks and an HF export. MODE ``resume``: a differently
initialized model loads that checkpoint and trains the remaining steps.
Results land in OUT as ``<mode>_rank<r>.pt`` (and ``export/``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch
from torch.distributed.tensor import DTensor

from lightrft.adapters.accelerators import CpuAccelerator
from lightrft.adapters.distributed import (
    TorchCollective,
    init_process_group_from_env,
    is_main_process,
    shutdown_process_group,
)
from lightrft.adapters.fsdp import Fsdp2Strategy
from lightrft.domain.types import StepResult
from tests.helpers.sharded_case import backward_batch
from tests.unit.adapters.fsdp.fsdp_case import (
    CKPT_AT,
    OPTIM,
    STEPS,
    tiny_model,
)


def gather_checks(strategy: Fsdp2Strategy) -> dict[str, float]:
    """Bucketed full_state versus per-parameter DTensor.full_tensor()."""
    direct = {
        name: (v.full_tensor() if isinstance(v, DTensor) else v).clone()
        for name, v in strategy.module.state_dict().items()
    }
    out: dict[str, float] = {}
    for label, bucket in (("one_param_buckets", 1), ("one_bucket", 2**40), ("mid", 20_000)):
        strategy._bucket_bytes = bucket
        got = dict(strategy.full_state())
        assert list(got) == list(direct), (list(got), list(direct))
        out[label] = max(float((got[k] - direct[k]).abs().max()) for k in direct)
    return out


def train(out: Path, strategy: Fsdp2Strategy, coll: TorchCollective) -> dict[str, object]:
    results: list[StepResult] = []
    extra: dict[str, StepResult] = {}
    for step in range(STEPS):
        if step == CKPT_AT:
            strategy.save_sharded(out / "ckpt")
        if step == 1:
            strategy.offload()
            strategy.onload()
        if step == 2:  # one rank asks to skip: both skip, nothing changes
            backward_batch(strategy, coll, step, 1.0)
            extra["requested"] = strategy.step(skip_reason="test" if coll.rank == 1 else None)
        if step == 3:  # NaN gradients everywhere: skipped for the norm
            backward_batch(strategy, coll, step, float("nan"))
            extra["nan"] = strategy.step()
        backward_batch(strategy, coll, step, 1.0)
        results.append(strategy.step())
    summed = coll.all_reduce_sum(torch.tensor([coll.rank + 1.0, 10.0]))
    checks = gather_checks(strategy)
    export = strategy.export_full_state_dict()
    if is_main_process():
        plain = tiny_model(0)
        plain.load_state_dict(export)
        plain.save_pretrained(out / "export")
    return {
        "results": results,
        "skips": extra,
        "summed": summed,
        "gather": checks,
        "export_keys": sorted(export),
    }


def run_rank(rank: int, world_size: int, port: int, mode: str, out: str) -> None:
    """Entry of a worker process: the launcher's variables, then :func:`main`."""
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    torch.set_num_threads(1)
    main(mode, Path(out))


def main(mode: str, out: Path) -> None:
    accelerator = CpuAccelerator()
    env = init_process_group_from_env(accelerator)
    coll = TorchCollective()
    strategy = Fsdp2Strategy(OPTIM, device=accelerator.device(), sync_bucket_bytes=4096)
    model = tiny_model(0 if mode == "train" else 1)
    strategy.prepare(model)
    if mode == "train":
        record = train(out, strategy, coll)
    else:
        strategy.load_sharded(out / "ckpt")
        record = {"results": []}
        for step in range(CKPT_AT, STEPS):
            backward_batch(strategy, coll, step, 1.0)
            record["results"].append(strategy.step())
    record["final"] = {name: t.clone() for name, t in strategy.full_state()}
    record["world_size"] = env.world_size
    torch.save(record, out / f"{mode}_rank{coll.rank}.pt")
    shutdown_process_group()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
