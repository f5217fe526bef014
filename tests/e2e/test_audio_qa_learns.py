"""The built-in audio multiple-choice task ``sound_choice`` (R1-AQA's prompt layout, scored by
``avqa_rule``: accuracy + format) is learned by GRPO on a tiny Qwen2-Audio.

From scratch the tiny model first learns the format (``<answer> </answer> </answer>`` scores
1) and never samples an option word between the tags again, so accuracy stays 0 (measured:
three recipes, 150-300 steps, format rate 1.0, accuracy 0.0). As R1-AQA starts from an
instruction-tuned model, the run starts from a format warm start: SFT on text-only rows of
the question answered with a random option inside the tags
(:func:`~tests.helpers.tiny_multimodal.answer_format_rows`), which teaches the format and
the option words but not which one a clip is (held-out greedy accuracy at step 0: chance).
The measured figures for seeds 0-2 are in docs/multimodal.md; this test runs seed 0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.tiny_multimodal import answer_format_rows, save_tiny_audio_model

SFT = """
import sys
from lightrft.entrypoints.wiring.registrations import register_builtins
register_builtins()  # `lightrft sft` with an audio-language modality needs the model loaders
from lightrft.entrypoints.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _run(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]


def grpo_overrides(model: Path, run: Path, seed: int) -> list[str]:
    """The documented recipe."""
    return [
        f"model.path={model}",
        "model.modality=audio-language",
        f"logging.run_dir={run}",
        "data.train.builtin=sound_choice",
        "data.train.num_builtin=256",
        f"data.train.seed={seed}",
        f"train.seed={seed}",
        "data.eval.builtin=sound_choice",
        "data.eval.num_builtin=64",
        "eval.max_prompts=64",
        "eval.every=50",
        "reward.sources=[{type: avqa_rule}]",
        "rollout.max_new_tokens=4",
        "rollout.prompts_per_step=8",
        "rollout.n_samples_per_prompt=16",
        "rollout.forward_micro_batch_size=128",
        "train.micro_batch_size=128",
        "optim.lr=1e-3",
        "algorithm.entropy_coef=0.1",
        "train.total_steps=200",
        "logging.progress=false",
        "checkpoint.export_final=false",
    ]


@pytest.mark.slow
def test_grpo_learns_the_audio_multiple_choice_task(tmp_path: Path) -> None:
    seed = 0
    model = save_tiny_audio_model(tmp_path / "model", seed=seed, choice_task=True)
    rows = answer_format_rows(tmp_path / "format.jsonl", seed)
    warm = tmp_path / "sft"
    sft = ["sft", "--model", str(model), "--data", str(rows), "--run-dir", str(warm)]
    sft += ["model.modality=audio-language", "sft.eval_data=null", "optim.lr=3e-3"]
    sft += ["sft.batch_size=16", "sft.micro_batch_size=16", "logging.progress=false"]
    _run(sys.executable, "-c", SFT, *sft, f"train.seed={seed}")
    run = tmp_path / "run"
    cli = [sys.executable, "-m", "lightrft.entrypoints.cli", "train", "grpo"]
    _run(*cli, *grpo_overrides(warm / "final_model", run, seed))
    evals = [
        (r["step"], r["eval/reward/avqa_rule/accuracy"], r["eval/reward/avqa_rule/format_rate"])
        for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())
        if "eval/reward/avqa_rule/accuracy" in r
    ]
    assert evals[0][0] == 0 and evals[0][1] <= 0.45  # chance: the warm start does not know
    assert evals[0][2] == 1.0  # ... but it knows the format
    assert max(accuracy for _, accuracy, _ in evals[-2:]) >= 0.9, evals
