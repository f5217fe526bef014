"""Ulysses sequence parallelism end to end: `lightrft train` on two CPU processes (gloo,
FSDP2, ``backend.sequence_parallel_size=2``: both ranks hold the same samples, each runs half
of every sequence) ends where one process on the same prompts ends."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM

from tests.e2e.test_distributed import _max_diff, _train, _weights

pytestmark = pytest.mark.slow  # two torchrun processes: about a minute on 2 cores


def test_two_sequence_parallel_ranks_match_one_process(tiny_dir: Path, tmp_path: Path) -> None:
    single, split = tmp_path / "single", tmp_path / "split"
    # one data-parallel replica in both runs: the same 2 prompts a step
    _train(tiny_dir, single, "train.total_steps=2", "rollout.prompts_per_step=2")
    _train(
        tiny_dir,
        split,
        "--nproc-per-node",
        "2",
        "backend.strategy=fsdp2",
        "backend.sequence_parallel_size=2",
        "train.total_steps=2",
        "rollout.prompts_per_step=2",
    )
    base = AutoModelForCausalLM.from_pretrained(tiny_dir).state_dict()
    moved = _max_diff(_weights(single), {k: base[k] for k in _weights(single)})
    assert moved > 1e-4  # the steps really changed the model
    assert _max_diff(_weights(single), _weights(split)) < 1e-5
    assert (split / "metrics.jsonl").read_text().count("\n") >= 2  # rank 0 alone logged
