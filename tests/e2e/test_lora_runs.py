"""LoRA through the CLI: runs are reproducible (fresh adapters come from the run's seed, on
one process and on two ranks), and the adapter is exported next to the merged model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM

from lightrft.entrypoints.cli import main
from tests.e2e.test_sft_cli import write_rows
from tests.helpers.cli_runs import final_weights, max_weight_diff, run_train

LORA = ["model.lora.rank=4", "model.lora.alpha=8", "logging.progress=false"]
GRPO = [
    "train.total_steps=1",
    "rollout.max_new_tokens=6",
    "rollout.prompts_per_step=2",
    "rollout.n_samples_per_prompt=2",
    "data.train.num_builtin=8",
    "data.eval=null",
    "optim.lr=1e-2",
    "reward.sources=[{type: python, function: 'tests.helpers.toy_rewards:text_checksum'}]",
]


def _sft(tiny_dir: Path, data: Path, run_dir: Path) -> dict[str, str]:
    argv = ["sft", "--model", str(tiny_dir), "--data", str(data), "--run-dir", str(run_dir)]
    options = ["sft.batch_size=4", "sft.micro_batch_size=2", "sft.eval_data=null"]
    assert main([*argv, *options, "optim.lr=1e-2", *LORA]) == 0
    return json.loads((run_dir / "summary.json").read_text())  # type: ignore[no-any-return]


def _assert_bitwise_equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    assert all(torch.equal(a[name], b[name]) for name in a), "the two runs differ"


def test_sft_with_lora_twice_ends_bitwise_equal_and_exports_the_adapter(
    tiny_dir: Path, tmp_path: Path
) -> None:
    data = write_rows(tmp_path / "rows.jsonl")
    first = _sft(tiny_dir, data, tmp_path / "first")
    torch.rand(1000)  # the second run starts from another global random state
    _sft(tiny_dir, data, tmp_path / "second")
    _assert_bitwise_equal(final_weights(tmp_path / "first"), final_weights(tmp_path / "second"))

    adapter = Path(first["final_adapter"])
    assert adapter == tmp_path / "first" / "final_adapter"
    assert (adapter / "adapter_config.json").is_file()
    assert (adapter / "adapter_model.safetensors").is_file()
    ids = torch.tensor([[5, 6, 7, 8, 9, 10]])
    with torch.no_grad():
        base = AutoModelForCausalLM.from_pretrained(tiny_dir)
        peft_logits = PeftModel.from_pretrained(base, adapter)(ids).logits
        merged = AutoModelForCausalLM.from_pretrained(first["final_model"])
        merged_logits = merged(ids).logits
        base_logits = AutoModelForCausalLM.from_pretrained(tiny_dir)(ids).logits
    torch.testing.assert_close(peft_logits, merged_logits, atol=1e-4, rtol=1e-4)
    assert float((merged_logits - base_logits).abs().max()) > 1e-3  # training moved it


def test_train_with_lora_twice_ends_bitwise_equal(tiny_dir: Path, tmp_path: Path) -> None:
    runs = [tmp_path / "first", tmp_path / "second"]
    for run_dir in runs:
        argv = ["train", "grpo", f"model.path={tiny_dir}", f"logging.run_dir={run_dir}"]
        assert main([*argv, *GRPO, *LORA]) == 0
        torch.rand(1000)
    _assert_bitwise_equal(final_weights(runs[0]), final_weights(runs[1]))
    summary = json.loads((runs[0] / "summary.json").read_text())
    assert (Path(summary["final_adapter"]) / "adapter_model.safetensors").is_file()


@pytest.mark.slow
def test_two_ranks_with_lora_start_from_the_same_adapters(tiny_dir: Path, tmp_path: Path) -> None:
    """fsdp2 shards each adapter over the ranks: shards of adapters drawn differently per
    rank would make a different model than the one-process run (and than each other)."""
    common = [*GRPO, *LORA, "train.micro_batch_size=1", "train.total_steps=2"]
    single, double = tmp_path / "single", tmp_path / "double"
    run_train(tiny_dir, single, *common, "rollout.prompts_per_step=2")
    two_ranks = ["--nproc-per-node", "2", "backend.strategy=fsdp2"]
    run_train(tiny_dir, double, *two_ranks, *common, "rollout.prompts_per_step=1")
    assert max_weight_diff(final_weights(single), final_weights(double)) < 1e-5
