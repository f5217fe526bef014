"""``DeepSpeedStrategy`` on one CUDA GPU: offload really frees device memory, and a round
trip leaves training unchanged. Skipped without CUDA (never run on the CPU machine the
adapter was developed on; everything else is covered by the CPU tests)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "deepspeed", reason="DeepSpeed is optional: pip install 'lightrft[deepspeed]' to run these"
)

import torch  # noqa: E402

from lightrft.adapters.distributed import free_port  # noqa: E402
from tests.unit.adapters.deepspeed.ds_case import max_diff, reference_run, tiny_model  # noqa: E402
from tests.unit.adapters.deepspeed.ds_gpu_worker import STAGES, run_gpu_rank  # noqa: E402

pytestmark = pytest.mark.gpu
# per parameter, world size 1, fp32: module weights 4 B + master copy 4 B (ZeRO 1-2) or
# master partition 4 B (ZeRO-3) + AdamW moments 8 B
MIN_FREED_BYTES_PER_PARAM = 12


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[int, bool], Any]:
    out: Path = tmp_path_factory.mktemp("deepspeed_gpu")
    proc = multiprocessing.get_context("spawn").Process(
        target=run_gpu_rank, args=(free_port(), str(out))
    )
    proc.start()
    proc.join(timeout=600)
    assert proc.exitcode == 0, "GPU worker failed; see captured stderr"
    return torch.load(out / "gpu.pt", weights_only=False)


@pytest.mark.parametrize("stage", STAGES)
def test_offload_frees_device_memory_and_the_round_trip_changes_nothing(
    results: dict[tuple[int, bool], Any], stage: int
) -> None:
    straight, round_trip = results[(stage, False)], results[(stage, True)]
    assert max_diff(round_trip["final"], straight["final"]) == 0.0
    reference, _ = reference_run()
    assert max_diff(straight["final"], reference) < 1e-4
    memory = round_trip["memory"]
    numel = sum(p.numel() for p in tiny_model().parameters())
    assert memory["before"] - memory["offloaded"] >= MIN_FREED_BYTES_PER_PARAM * numel
    assert memory["onloaded"] > memory["offloaded"]
