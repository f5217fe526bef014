"""ZeRO-Offload (``cpu_offload=True``: DeepSpeedCPUAdam on host-resident fp32 master
weights) on two real CPU processes, ZeRO 1, 2 and 3.

Marked slow: DeepSpeedCPUAdam's C++ kernel is compiled on first use (about 3 minutes on
2 cores; cached in ``TORCH_EXTENSIONS_DIR``, default ``~/.cache/torch_extensions``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "deepspeed", reason="DeepSpeed is optional: pip install 'lightrft[deepspeed]' to run these"
)

from tests.unit.adapters.deepspeed import ds_launch  # noqa: E402
from tests.unit.adapters.deepspeed.ds_case import (  # noqa: E402
    EXPECTED_LRS,
    max_diff,
    reference_run,
)
from tests.unit.adapters.deepspeed.ds_worker import Case  # noqa: E402

pytestmark = pytest.mark.slow
CASES = [Case(1, cpu_offload=True), Case(2, cpu_offload=True), Case(3, cpu_offload=True)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[Case, list[dict[str, Any]]]:
    out: Path = tmp_path_factory.mktemp("deepspeed_offload")
    procs = ds_launch.start(CASES, out)
    ds_launch.wait(procs)
    return {case: ds_launch.load(out, case) for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_offloaded_optimizer_trains_like_one_process_adamw(
    runs: dict[Case, list[dict[str, Any]]], case: Case
) -> None:
    reference, norms = reference_run()
    for rank in range(2):
        record = runs[case][rank]
        train = record["train"]
        assert max_diff(train["final"], reference) < 1e-5
        assert [r.lr for r in train["results"]] == pytest.approx(EXPECTED_LRS, rel=1e-12)
        assert [r.grad_norm for r in train["results"]] == pytest.approx(norms, rel=1e-5)
        assert train["skips"]["requested"].skipped
        nan = train["skips"]["nan"]
        assert nan.skipped and not math.isfinite(nan.grad_norm)
        for source in ("resume_checkpoint", "resume_state_dict"):
            assert max_diff(record[source]["final"], train["final"]) == 0.0
