"""The single-GPU DeepSpeed check, run by ``run_gpu_rank`` in a fresh process (rank 0 of 1).

Trains the tiny model twice per ZeRO stage on ``cuda:0``: once straight through, once with
an offload/onload round trip after step 1, recording the allocated device memory around
the round trip. Results land in OUT as ``gpu.pt``.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

import torch

from lightrft.adapters.accelerators import CudaAccelerator
from lightrft.adapters.deepspeed import DeepSpeedStrategy
from lightrft.adapters.distributed import init_process_group_from_env, shutdown_process_group
from lightrft.domain.aggregation import LossNormalizer
from tests.unit.adapters.deepspeed.ds_case import (
    EXTRA_CONFIG,
    MICRO,
    OPTIM,
    STEPS,
    global_batch,
    nll_loss,
    tiny_model,
)

STAGES = (1, 2, 3)


def train(device: torch.device, stage: int, round_trip: bool) -> dict[str, Any]:
    strategy = DeepSpeedStrategy(OPTIM, device=device, zero_stage=stage, extra_config=EXTRA_CONFIG)
    strategy.prepare(tiny_model(0))
    memory: dict[str, int] = {}
    for step in range(STEPS):
        input_ids, mask = (t.to(device) for t in global_batch(step))
        normalizer = LossNormalizer.from_mask(mask)
        for start in range(0, input_ids.shape[0], MICRO):
            rows = slice(start, start + MICRO)
            strategy.backward(nll_loss(strategy.module, input_ids[rows], mask[rows], normalizer))
        strategy.step()
        if round_trip and step == 1:
            torch.cuda.synchronize(device)
            memory["before"] = torch.cuda.memory_allocated(device)
            strategy.offload()
            gc.collect()
            memory["offloaded"] = torch.cuda.memory_allocated(device)
            strategy.onload()
            memory["onloaded"] = torch.cuda.memory_allocated(device)
    final = {name: t.detach().cpu() for name, t in strategy.full_state()}
    return {"final": final, "memory": memory}


def run_gpu_rank(port: int, out: str) -> None:
    """Entry of the worker process."""
    os.environ.update(
        RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    accelerator = CudaAccelerator(0)
    init_process_group_from_env(accelerator)
    device = accelerator.device()
    results = {
        (stage, round_trip): train(device, stage, round_trip)
        for stage in STAGES
        for round_trip in (False, True)
    }
    torch.save(results, Path(out) / "gpu.pt")
    shutdown_process_group()
