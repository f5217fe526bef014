"""Commands with the original LightRFT's flags run: the README's distributed block in one
process (a one-rank group for the sharded strategy), `--num_episodes` (train.episodes: the
run length from the dataset's size)."""

from __future__ import annotations

import json
from pathlib import Path

from lightrft.entrypoints.jobs.training import episode_steps
from tests.helpers.cli_runs import TINY, run_train


def test_episode_steps_round_a_pass_up() -> None:
    assert episode_steps(3, prompts=16, prompts_per_step=4, ranks=2) == 6  # 2 steps a pass
    assert episode_steps(2, prompts=6, prompts_per_step=4, ranks=1) == 4  # 6 / 4 -> 2 steps


def test_num_episodes_sets_the_steps_of_a_run(tiny_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    overrides = [
        o for o in TINY if not o.startswith(("train.total_steps", "data.train.num_builtin"))
    ]
    run_train(tiny_dir, run, *overrides, "data.train.num_builtin=6", "--num_episodes", "2")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 6  # 2 episodes x (6 prompts / 2 prompts per step)


def test_the_readme_distributed_block_runs_in_one_process(tiny_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    block = ["--fsdp", "--zero_stage", "3", "--gradient_checkpointing", "--adam_offload", "--bf16"]
    run_train(tiny_dir, run, *TINY, *block)
    config = (run / "config.yaml").read_text()
    # under FSDP the original's --adam_offload moves the optimizer state to host memory outside
    # the update, as the phase switching here does anyway: no parameter offload
    assert "type: fsdp2" in config and "cpu_offload: false" in config and "dtype: bf16" in config
    assert json.loads((run / "summary.json").read_text())["steps"] == 2
