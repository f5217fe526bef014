"""``Fsdp2Strategy`` on two real CPU processes (gloo).

The workers (``fsdp_worker.py``) are started with the variables torchrun sets and join the
group through ``init_process_group_from_env``. Each rank trains on half of every global
batch, in micro-batches, with global ``LossNormalizer`` counts and loss * world_size; the
run must end where a plain single-process AdamW run on the whole batch ends. A second
pair of processes resumes from the sharded checkpoint and must continue identically.
"""

from __future__ import annotations

import math
import multiprocessing
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import LlamaForCausalLM

from lightrft.adapters.distributed import free_port
from tests.helpers.sharded_case import reference_run as shared_reference_run
from tests.unit.adapters.fsdp.fsdp_case import (
    CKPT_AT,
    EXPECTED_LRS,
    OPTIM,
    global_batch,
    tiny_model,
)
from tests.unit.adapters.fsdp.fsdp_worker import run_rank

WORKER_MODULE = "tests.unit.adapters.fsdp.fsdp_worker"
TOL = 1e-5


@dataclass
class Reference:
    """Single-process run on the whole batch: final state and pre-clip gradient norms."""

    state: dict[str, torch.Tensor]
    grad_norms: list[float]


def reference_run() -> Reference:
    """Plain torch: one forward over all B rows per step, clip_grad_norm_, AdamW."""
    state, norms = shared_reference_run(len(EXPECTED_LRS))
    return Reference(state, norms)


def _launch(mode: str, out: Path) -> list[BaseProcess]:
    """Two worker processes forked from a server that imported torch and transformers once."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([WORKER_MODULE])
    port = free_port()
    procs = [
        ctx.Process(target=run_rank, args=(rank, 2, port, mode, str(out)), daemon=True)
        for rank in range(2)
    ]
    for proc in procs:
        proc.start()
    return procs


def _wait(procs: list[BaseProcess]) -> None:
    for proc in procs:
        proc.join(timeout=300)
    for proc in procs:
        if proc.is_alive():
            proc.kill()
    codes = [proc.exitcode for proc in procs]
    assert codes == [0, 0], f"worker exit codes {codes}; tracebacks in the captured stderr"


@dataclass
class Runs:
    out: Path
    train: list[dict[str, Any]]  # per rank
    resume: list[dict[str, Any]]
    reference: Reference


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    out = tmp_path_factory.mktemp("fsdp2")
    proc = _launch("train", out)
    reference = reference_run()  # computed while the workers run
    _wait(proc)
    _wait(_launch("resume", out))

    def load(mode: str) -> list[dict[str, Any]]:
        return [torch.load(out / f"{mode}_rank{r}.pt", weights_only=False) for r in range(2)]

    return Runs(out, load("train"), load("resume"), reference)


def _max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert sorted(a) == sorted(b)
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


def test_two_ranks_end_where_one_process_on_the_whole_batch_ends(runs: Runs) -> None:
    # the run also went through offload/onload and two skipped steps: none may change it
    assert runs.train[0]["world_size"] == 2
    assert _max_diff(runs.train[0]["final"], runs.reference.state) < TOL
    assert _max_diff(runs.train[0]["final"], tiny_model(0).state_dict()) > 1e-3  # it trained


def test_every_rank_gathers_the_same_full_state(runs: Runs) -> None:
    assert _max_diff(runs.train[0]["final"], runs.train[1]["final"]) == 0.0


def test_steps_report_the_global_pre_clip_norm_and_the_schedule(runs: Runs) -> None:
    for rank in range(2):
        results = runs.train[rank]["results"]
        assert [r.lr for r in results] == pytest.approx(EXPECTED_LRS, rel=1e-12)
        norms = [r.grad_norm for r in results]
        assert norms == pytest.approx(runs.reference.grad_norms, rel=1e-5)
        assert not any(r.skipped for r in results)
    assert min(runs.reference.grad_norms) > OPTIM.max_grad_norm  # clipping was active


def test_a_skip_asked_by_one_rank_skips_on_every_rank(runs: Runs) -> None:
    rank0, rank1 = (runs.train[r]["skips"]["requested"] for r in range(2))
    assert rank0.skipped and rank1.skipped
    assert rank1.reason == "test"
    assert rank0.reason == "skip requested on another rank"
    assert rank0.lr == pytest.approx(EXPECTED_LRS[2])  # the schedule did not advance
    assert rank0.grad_norm == pytest.approx(runs.reference.grad_norms[2], rel=1e-5)


def test_a_nan_gradient_skips_the_step(runs: Runs) -> None:
    for rank in range(2):
        result = runs.train[rank]["skips"]["nan"]
        assert result.skipped and math.isnan(result.grad_norm)
        assert "non-finite" in result.reason
        assert result.lr == pytest.approx(EXPECTED_LRS[3])


def test_resume_from_the_sharded_checkpoint_continues_identically(runs: Runs) -> None:
    # the resumed model started from another seed: only the checkpoint makes it match
    assert _max_diff(runs.resume[0]["final"], runs.train[0]["final"]) < 1e-6
    resumed = runs.resume[0]["results"]
    original = runs.train[0]["results"][CKPT_AT:]
    assert [r.lr for r in resumed] == [r.lr for r in original]
    assert [r.grad_norm for r in resumed] == pytest.approx([r.grad_norm for r in original])


def test_export_on_rank_0_loads_with_plain_from_pretrained(runs: Runs) -> None:
    assert runs.train[1]["export_keys"] == []  # other ranks get nothing
    loaded = LlamaForCausalLM.from_pretrained(runs.out / "export")
    assert _max_diff(loaded.state_dict(), runs.reference.state) < TOL
    reference = tiny_model(0)
    reference.load_state_dict(runs.reference.state)
    input_ids, _ = global_batch(99)
    with torch.no_grad():
        got, want = loaded(input_ids).logits, reference(input_ids).logits
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_bucketed_gather_equals_per_parameter_full_tensor(runs: Runs) -> None:
    for rank in range(2):
        expected = {"one_param_buckets": 0.0, "one_bucket": 0.0, "mid": 0.0}
        assert runs.train[rank]["gather"] == expected


def test_torch_collective_sums_over_the_two_ranks(runs: Runs) -> None:
    for rank in range(2):
        # rank r contributes [r + 1, 10]: [1 + 2, 10 + 10]
        assert runs.train[rank]["summed"].tolist() == [3.0, 20.0]
