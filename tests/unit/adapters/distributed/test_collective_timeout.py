"""``backend.collective_timeout_s`` reaches ``init_process_group``: with two gloo ranks, one
of which never joins the all-reduce, the other fails after the configured seconds with a
:class:`CollectiveTimeoutError` naming its rank and the operation (not the 30-minute
default)."""

from __future__ import annotations

import multiprocessing
import os
import time
from typing import Any

from lightrft.adapters.distributed import free_port

TIMEOUT_S = 2


def _rank(rank: int, port: int, results: Any) -> None:
    os.environ.update(
        RANK=str(rank),
        WORLD_SIZE="2",
        LOCAL_RANK=str(rank),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        OMP_NUM_THREADS="1",
    )
    import torch

    from lightrft.adapters.distributed import CollectiveTimeoutError, shutdown_process_group
    from lightrft.entrypoints.config import load_config
    from lightrft.entrypoints.wiring import models

    overrides = [f"backend.collective_timeout_s={TIMEOUT_S}", "backend.accelerator=cpu"]
    config = load_config(None, overrides, algorithm="grpo")
    collective = models.build_collective(config, models.build_accelerator(config))
    if rank == 1:  # a stopped rank: it never joins the collective
        time.sleep(TIMEOUT_S * 2)
        results.put((rank, "slept", 0.0))
        return
    started = time.monotonic()
    try:
        collective.all_reduce_sum(torch.ones(3))
        results.put((rank, "no error", time.monotonic() - started))
    except CollectiveTimeoutError as error:
        results.put((rank, str(error), time.monotonic() - started))
    finally:
        shutdown_process_group()


def test_a_rank_that_never_joins_fails_the_others_after_the_configured_timeout() -> None:
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    port = free_port()
    ranks = [context.Process(target=_rank, args=(r, port, results)) for r in (0, 1)]
    for process in ranks:
        process.start()
    try:
        found = {}
        for _ in ranks:
            rank, message, elapsed = results.get(timeout=60)
            found[rank] = (message, elapsed)
    finally:
        for process in ranks:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
    message, elapsed = found[0]
    assert message.startswith("rank 0 of 2: all_reduce (sum) of a (3,) tensor timed out"), message
    assert "backend.collective_timeout_s" in message
    assert TIMEOUT_S * 0.9 <= elapsed < TIMEOUT_S * 3  # the configured limit, not 30 minutes
