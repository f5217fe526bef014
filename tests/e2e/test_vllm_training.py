"""`lightrft train grpo rollout.engine=vllm` end to end on the real vLLM CPU backend
(skipped when vLLM is not installed): 2 steps in one process, and 2 torchrun ranks against
1 rank on the same global batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli_runs import final_weights, max_weight_diff, run_train
from tests.unit.adapters.vllm.vllm_tiny import require_vllm, tiny_vllm_model, write_model_dir

COMMON = [
    "rollout.engine=vllm",
    "rollout.max_new_tokens=6",
    "rollout.n_samples_per_prompt=2",
    "train.total_steps=2",
    "eval.every=null",
    "data.eval=null",
    "optim.lr=1e-3",
    "data.train.num_builtin=16",
    "logging.progress=false",
    "train.micro_batch_size=1",
    "reward.sources=[{type: python, function: 'tests.helpers.toy_rewards:text_checksum'}]",
]


@pytest.fixture(scope="module")
def vllm_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_vllm()
    return write_model_dir(tmp_path_factory.mktemp("tiny_vllm") / "model", tiny_vllm_model(0))


def _train(model_dir: Path, run_dir: Path, *extra: str) -> None:
    run_train(model_dir, run_dir, *COMMON, *extra)


_weights, _max_diff = final_weights, max_weight_diff


def test_two_steps_with_vllm_train_and_log_the_mismatch(
    vllm_model_dir: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    _train(vllm_model_dir, run, "rollout.prompts_per_step=2")
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "rollout/logp_diff_max" in r]
    assert len(steps) == 2
    for row in steps:  # fp32 engine and trainer: the same distribution up to rounding
        assert row["rollout/logp_diff_max"] < 1e-3
        assert abs(row["rollout/is_ratio_mean"] - 1) < 1e-3
    base = tiny_vllm_model(0).state_dict()
    final = _weights(run)
    assert _max_diff(final, {k: base[k] for k in final}) > 1e-4  # the steps moved the model


@pytest.mark.slow
def test_two_ranks_match_one_rank_on_the_same_global_batch(
    vllm_model_dir: Path, tmp_path: Path
) -> None:
    single, double = tmp_path / "single", tmp_path / "double"
    _train(vllm_model_dir, single, "rollout.prompts_per_step=2")
    _train(
        vllm_model_dir,
        double,
        "--nproc-per-node",
        "2",
        "backend.strategy=fsdp2",
        "rollout.prompts_per_step=1",
    )  # per rank: 2 ranks x 1 = the same 2 prompts a step, one vLLM engine per rank
    base = tiny_vllm_model(0).state_dict()
    moved = _max_diff(_weights(single), {k: base[k] for k in _weights(single)})
    assert moved > 1e-3  # Adam at lr 1e-3: each step moves weights by ~1e-3
    # Same samples (per-sample seeds) and the same gradients up to summation order; a
    # single different sample would move weights by ~1e-3. Measured: 1.05e-5.
    assert _max_diff(_weights(single), _weights(double)) < 1e-4
