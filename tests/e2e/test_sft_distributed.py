"""`lightrft sft` on two CPU processes (torchrun, gloo, FSDP2) ends where one process ends:
two data-parallel ranks with half of every step's rows each, and two sequence-parallel ranks
(``backend.sequence_parallel_size=2``: both ranks hold the same rows, each runs half of every
sequence). The step count comes from the epoch (no ``sft.total_steps``) and the LR schedule
is cosine, so a run that miscounts its data-parallel ranks logs other learning rates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM

from tests.e2e.test_sft_cli import write_rows  # the 8 rows a+b= -> a+b
from tests.helpers.cli_runs import final_weights, max_weight_diff, run_sft

pytestmark = pytest.mark.slow  # three CLI runs, two of them torchrun pairs: about 80 s

COMMON = [
    "sft.micro_batch_size=1",
    "sft.eval_data=null",
    "optim.lr=1e-2",
    "optim.schedule=cosine",
    "logging.progress=false",
]
TWO_RANKS = ["--nproc-per-node", "2", "backend.strategy=fsdp2"]
TOL = 1e-5


@pytest.fixture(scope="module")
def runs(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """8 rows, 4 per step (2 steps): one process; 2 DP ranks x 2 rows; 2 SP ranks x 4 rows."""
    out = tmp_path_factory.mktemp("sft_ranks")
    data = write_rows(out / "rows.jsonl")
    plans = {
        "single": ["sft.batch_size=4"],
        "fsdp2": [*TWO_RANKS, "sft.batch_size=2"],
        "sequence_parallel": [*TWO_RANKS, "backend.sequence_parallel_size=2", "sft.batch_size=4"],
    }
    for name, extra in plans.items():
        run_sft(tiny_dir, data, out / name, *COMMON, *extra)
    return {name: out / name for name in plans}


def logged(run_dir: Path, key: str) -> list[float]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)[key] for line in lines if key in line]


def test_one_process_trains(runs: dict[str, Path], tiny_dir: Path) -> None:
    single = final_weights(runs["single"])
    base = AutoModelForCausalLM.from_pretrained(tiny_dir).state_dict()
    assert max_weight_diff(single, {k: base[k] for k in single}) > 1e-4  # the steps moved it
    lrs = logged(runs["single"], "train/lr")
    assert lrs[0] == pytest.approx(1e-2) and lrs[1] < lrs[0]  # cosine over the 2 steps


@pytest.mark.parametrize("name", ["fsdp2", "sequence_parallel"])
def test_two_ranks_match_one_process(runs: dict[str, Path], name: str) -> None:
    assert logged(runs[name], "train/lr") == logged(runs["single"], "train/lr")
    losses = logged(runs[name], "train/loss")
    assert losses == pytest.approx(logged(runs["single"], "train/loss"), abs=TOL)
    assert len(losses) == 2  # rank 0 alone logged
    assert max_weight_diff(final_weights(runs[name]), final_weights(runs["single"])) < TOL
