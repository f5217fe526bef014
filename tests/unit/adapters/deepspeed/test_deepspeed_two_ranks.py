"""``DeepSpeedStrategy`` on two real CPU processes (gloo), ZeRO 0, 1, 2, 3 and ZeRO-3 bf16.

Each rank trains on half of every global batch, in two micro-batches, with global
``LossNormalizer`` counts and loss * world_size; the run must end where a plain
single-process AdamW run on the whole batch ends (``ds_case.reference_run``). The same
processes resume twice from the state before step 3 (DeepSpeed checkpoint; saved
``state_dict``) with a differently initialized model and must continue identically.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "deepspeed", reason="DeepSpeed is optional: pip install 'lightrft[deepspeed]' to run these"
)

import torch  # noqa: E402
from transformers import LlamaForCausalLM  # noqa: E402

from tests.unit.adapters.deepspeed import ds_launch  # noqa: E402
from tests.unit.adapters.deepspeed.ds_case import (  # noqa: E402
    CKPT_AT,
    EXPECTED_LRS,
    OPTIM,
    global_batch,
    max_diff,
    reference_run,
    tiny_model,
)
from tests.unit.adapters.deepspeed.ds_worker import Case  # noqa: E402

TOL = 1e-5
FP32_CASES = [Case(0), Case(1), Case(2), Case(3)]
BF16_CASE = Case(3, bf16=True)
ALL_CASES = [*FP32_CASES, BF16_CASE]


@dataclass
class Runs:
    out: Path
    records: dict[Case, list[dict[str, Any]]]  # per case, per rank
    reference: dict[str, torch.Tensor]
    reference_norms: list[float]

    def train(self, case: Case, rank: int = 0) -> dict[str, Any]:
        return self.records[case][rank]["train"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    out = tmp_path_factory.mktemp("deepspeed")
    procs = ds_launch.start(ALL_CASES, out)
    reference, norms = reference_run()  # computed while the workers run
    ds_launch.wait(procs)
    records = {case: ds_launch.load(out, case) for case in ALL_CASES}
    return Runs(out, records, reference, norms)


@pytest.mark.parametrize("case", FP32_CASES, ids=lambda c: c.name)
def test_two_ranks_end_where_one_process_on_the_whole_batch_ends(runs: Runs, case: Case) -> None:
    # the run also went through offload/onload and two skipped steps: none may change it
    final = runs.train(case)["final"]
    assert max_diff(final, runs.reference) < TOL
    assert max_diff(final, tiny_model(0).state_dict()) > 1e-3  # it trained


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_every_rank_gathers_the_same_full_state(runs: Runs, case: Case) -> None:
    assert max_diff(runs.train(case, 0)["final"], runs.train(case, 1)["final"]) == 0.0


def test_zero3_partitions_parameters_and_full_state_gathers_them(runs: Runs) -> None:
    for case in (Case(3), BF16_CASE):
        for rank in range(2):
            record = runs.train(case, rank)
            assert record["local_numels"] == 0  # each rank's module holds no full tensor
            full = record["final"]
            assert {k: v.shape for k, v in full.items()} == {
                k: v.shape for k, v in runs.reference.items()
            }
    assert runs.train(Case(2))["local_numels"] == sum(p.numel() for p in tiny_model().parameters())


@pytest.mark.parametrize("case", FP32_CASES, ids=lambda c: c.name)
def test_steps_report_the_global_pre_clip_norm_and_the_schedule(runs: Runs, case: Case) -> None:
    for rank in range(2):
        results = runs.train(case, rank)["results"]
        assert [r.lr for r in results] == pytest.approx(EXPECTED_LRS, rel=1e-12)
        assert [r.grad_norm for r in results] == pytest.approx(runs.reference_norms, rel=1e-5)
        assert not any(r.skipped for r in results)
    assert min(runs.reference_norms) > OPTIM.max_grad_norm  # clipping was active


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_a_skip_asked_by_one_rank_skips_on_every_rank(runs: Runs, case: Case) -> None:
    rank0, rank1 = (runs.train(case, r)["skips"]["requested"] for r in range(2))
    assert rank0.skipped and rank1.skipped
    assert rank1.reason == "test"
    assert rank0.reason == "skip requested on another rank"
    assert rank0.lr == pytest.approx(EXPECTED_LRS[2])  # the schedule did not advance
    assert rank0.grad_norm == pytest.approx(runs.reference_norms[2], rel=2e-2)


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_a_nan_gradient_skips_the_step(runs: Runs, case: Case) -> None:
    for rank in range(2):
        result = runs.train(case, rank)["skips"]["nan"]
        # DeepSpeed reports a non-finite norm as inf under ZeRO; stage 0 sees the NaN
        assert result.skipped and not math.isfinite(result.grad_norm)
        assert result.reason.startswith("non-finite grad norm")
        assert result.lr == pytest.approx(EXPECTED_LRS[3])


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("source", ["resume_checkpoint", "resume_state_dict"])
def test_resume_continues_identically(runs: Runs, case: Case, source: str) -> None:
    # the resumed model started from another seed: only the loaded state makes it match
    for rank in range(2):
        resumed = runs.records[case][rank][source]
        original = runs.train(case, rank)
        assert max_diff(resumed["final"], original["final"]) == 0.0
        later = original["results"][CKPT_AT:]
        assert [r.lr for r in resumed["results"]] == [r.lr for r in later]
        assert [r.grad_norm for r in resumed["results"]] == [r.grad_norm for r in later]


@pytest.mark.parametrize("case", [Case(1), Case(3)], ids=lambda c: c.name)
def test_export_on_rank_0_loads_with_plain_from_pretrained(runs: Runs, case: Case) -> None:
    assert runs.train(case, 1)["export_keys"] == []  # other ranks get nothing
    assert runs.train(case, 0)["export_keys"] == sorted(runs.reference)
    loaded = LlamaForCausalLM.from_pretrained(runs.out / case.name / "export")
    assert max_diff(loaded.state_dict(), runs.reference) < TOL
    reference = tiny_model(0)
    reference.load_state_dict(runs.reference)
    input_ids, _ = global_batch(99)
    with torch.no_grad():
        got, want = loaded(input_ids).logits, reference(input_ids).logits
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_offloaded_strategy_refuses_to_step(runs: Runs) -> None:
    for case in ALL_CASES:
        message = runs.train(case)["step_while_offloaded"]
        assert "while offloaded" in message


def test_bf16_trains_bf16_weights_close_to_the_fp32_run(runs: Runs) -> None:
    record = runs.train(BF16_CASE)
    assert record["param_dtypes"] == ["torch.bfloat16"]
    final = record["final"]
    assert all(t.dtype == torch.bfloat16 for t in final.values())
    # bf16 forward/backward: same trajectory up to bf16 rounding (8 mantissa bits)
    assert [r.grad_norm for r in record["results"]] == pytest.approx(runs.reference_norms, rel=2e-2)
    assert max_diff(final, runs.reference) < 0.1
    assert max_diff(final, tiny_model(0).state_dict()) > 1e-2  # it trained
    exported = LlamaForCausalLM.from_pretrained(runs.out / BF16_CASE.name / "export")
    assert max_diff(exported.state_dict(), final) == 0.0  # bf16 -> fp32 is exact
