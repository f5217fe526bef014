"""Ulysses sequence parallelism on two real CPU processes (gloo): log-probs, entropies and
gradients equal the one-process forward of the same long sequence, one FSDP2 optimizer
step equals a single-device step, and each rank keeps less activation memory."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest
import torch

from lightrft.adapters.distributed import free_port
from lightrft.adapters.hf.logprobs import response_logprobs
from lightrft.adapters.hf.packed_prefix import pack_prefix_plan
from lightrft.adapters.hf.prefix_plan import plan_prefix_sharing
from lightrft.adapters.hf.prefix_sharing import prefix_shared_logprobs
from lightrft.adapters.single_device import SingleDeviceStrategy
from tests.unit.adapters.fsdp.ulysses_case import (
    OPTIM,
    long_batch,
    long_model,
    saved_activation_bytes,
    sp_loss,
)
from tests.unit.adapters.fsdp.ulysses_worker import run_rank

WORKER_MODULE = "tests.unit.adapters.fsdp.ulysses_worker"
pytestmark = pytest.mark.slow  # two processes importing transformers: about 15 s


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out = tmp_path_factory.mktemp("ulysses")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([WORKER_MODULE])
    port = free_port()
    procs = [
        ctx.Process(target=run_rank, args=(r, 2, port, str(out)), daemon=True) for r in range(2)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0]
    return [torch.load(Path(out) / f"rank{r}.pt", weights_only=False) for r in range(2)]


def test_logprobs_and_gradients_equal_one_process(ranks: list[dict[str, Any]]) -> None:
    batch = long_batch()
    model = long_model()
    want = response_logprobs(model, batch, with_entropy=True)
    assert want.entropy is not None
    sp_loss(want.logprobs, want.entropy, batch).backward()
    grad = torch.cat([p.grad.flatten() for p in model.parameters()])
    for rank in ranks:
        torch.testing.assert_close(rank["logprobs"], want.logprobs.detach(), atol=3e-5, rtol=1e-5)
        torch.testing.assert_close(rank["entropy"], want.entropy.detach(), atol=3e-5, rtol=1e-5)
        torch.testing.assert_close(rank["grad"], grad, atol=1e-5, rtol=1e-4)


def test_one_fsdp2_step_equals_a_single_device_step(ranks: list[dict[str, Any]]) -> None:
    batch = long_batch()
    model = long_model()
    strategy = SingleDeviceStrategy(torch.device("cpu"), OPTIM)
    strategy.prepare(model)
    out = response_logprobs(model, batch, with_entropy=True)
    assert out.entropy is not None
    strategy.backward(sp_loss(out.logprobs, out.entropy, batch))
    step = strategy.step()
    want = {k: v.detach() for k, v in model.state_dict().items()}
    for rank in ranks:
        assert rank["step"].grad_norm == pytest.approx(step.grad_norm, rel=1e-4)
        got = rank["final"]
        assert sorted(got) == sorted(want)
        for name in want:
            torch.testing.assert_close(got[name], want[name], atol=1e-6, rtol=1e-5)
    assert max(float((want[k] - long_model().state_dict()[k]).abs().max()) for k in want) > 1e-4


def test_each_rank_keeps_less_activation_memory(ranks: list[dict[str, Any]]) -> None:
    batch = long_batch()
    model = long_model()
    plan = pack_prefix_plan(plan_prefix_sharing(batch), 10_000)  # the same one-row layout
    _, one = saved_activation_bytes(
        model, lambda: prefix_shared_logprobs(model, batch, with_entropy=True, plan=plan)
    )
    per_rank = [rank["saved_bytes"] for rank in ranks]
    print(f"activation bytes: one process {one}, per rank with SP=2 {per_rank}")
    assert max(per_rank) < 0.7 * one
