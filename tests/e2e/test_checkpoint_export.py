"""`lightrft checkpoints export`: an intermediate checkpoint as a Hugging Face directory.

Each run saves a checkpoint at step 1 and ends at step 2 (its final export); exporting the
step-2 checkpoint must give the final export's weights exactly, and step 1 other weights.
Two-rank runs (FSDP2, DeepSpeed ZeRO-3) use torchrun on gloo.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from lightrft.entrypoints.cli import main
from lightrft.entrypoints.jobs.checkpoint_export import export_checkpoint
from tests.helpers.cli_runs import final_weights, run_train

COMMON = [
    "train.total_steps=2",
    "checkpoint.every=1",
    "checkpoint.keep_last=3",
    "rollout.max_new_tokens=4",
    "rollout.n_samples_per_prompt=2",
    "data.train.num_builtin=8",
    "data.eval=null",
    "eval.every=null",
    "optim.lr=1e-2",
    "logging.progress=false",
    "train.micro_batch_size=1",
    "reward.sources=[{type: python, function: 'tests.helpers.toy_rewards:text_checksum'}]",
]
TWO_RANKS = ["--nproc-per-node", "2", "rollout.prompts_per_step=1"]
NEEDS_DEEPSPEED = pytest.mark.skipif(
    importlib.util.find_spec("deepspeed") is None, reason="deepspeed is not installed"
)


def _exported(directory: Path) -> dict[str, torch.Tensor]:
    return load_file(str(directory / "model.safetensors"))


def _check_export(run: Path, tmp_path: Path) -> None:
    last = export_checkpoint(run, tmp_path / "step2")
    assert last.step == 2
    final, exported = final_weights(run), _exported(tmp_path / "step2")
    assert final.keys() == exported.keys()
    assert all(torch.equal(final[k], exported[k]) for k in final)  # bitwise
    first = _exported(export_checkpoint(run, tmp_path / "step1", step=1).model)
    assert any(not torch.equal(first[k], final[k]) for k in final)  # step 2 trained on


def test_single_device_checkpoint_exports_the_final_weights(tiny_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run_train(tiny_dir, run, *COMMON, "rollout.prompts_per_step=2")
    _check_export(run, tmp_path)


def test_lora_checkpoint_exports_merged_weights_and_the_adapter(
    tiny_dir: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run_train(tiny_dir, run, *COMMON, "rollout.prompts_per_step=2", "model.lora.rank=4")
    _check_export(run, tmp_path)
    adapter = tmp_path / "step2" / "adapter"
    assert (adapter / "adapter_config.json").is_file()
    final_adapter = load_file(str(run / "final_adapter" / "adapter_model.safetensors"))
    ours = load_file(str(adapter / "adapter_model.safetensors"))
    assert final_adapter.keys() == ours.keys()
    assert all(torch.equal(final_adapter[k], ours[k]) for k in ours)


@pytest.mark.slow
def test_two_rank_fsdp2_checkpoint_exports_the_final_weights(
    tiny_dir: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run_train(tiny_dir, run, *COMMON, *TWO_RANKS, "backend.strategy=fsdp2")
    assert (run / "checkpoints" / "rank_00001").is_dir()
    _check_export(run, tmp_path)


@pytest.mark.slow
@NEEDS_DEEPSPEED
def test_two_rank_zero3_checkpoint_exports_the_final_weights(
    tiny_dir: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    strategy = ["backend.strategy=deepspeed", "backend.strategy.zero_stage=3"]
    run_train(tiny_dir, run, *COMMON, *TWO_RANKS, *strategy)
    _check_export(run, tmp_path)


def test_the_command_exports_and_names_a_missing_step(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run_train(tiny_dir, run, *COMMON, "rollout.prompts_per_step=2", "train.total_steps=1")
    out = tmp_path / "out"
    assert main(["checkpoints", "export", str(run), "--out", str(out)]) == 0
    assert f"exported step 1 of {run} to {out}" in capsys.readouterr().out
    exported, final = _exported(out), final_weights(run)
    assert all(torch.equal(exported[k], final[k]) for k in final)
    assert main(["checkpoints", "export", str(run), "--step", "7", "--out", str(out)]) == 2
    assert "no checkpoint of step 7; steps: 1" in capsys.readouterr().err
