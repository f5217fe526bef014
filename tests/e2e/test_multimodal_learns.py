"""`lightrft train grpo` learns the built-in visual and audio tasks on CPU, from scratch.

Observed here (one thread, busy 2-core machine, 8 prompts x 8 samples, lr 3e-3): visual
colour reaches 1.0 around step 70 of 120 (about 2 minutes); tones reach >= 0.9 around step
40 of 80. Fewer samples per prompt (4) made the visual run stall at 0.5 on some data seeds.

The models are tiny random Qwen2-VL / Qwen2-Audio over a word-level tokenizer (each answer
one token), saved with ``save_pretrained`` and trained through the CLI (subprocess, one
thread: bitwise reproducible here). At step 0 the reward is far below chance (the answer
is 1 of ~45 tokens); GRPO must first learn to answer with a colour / an ordinal, then to
read the image / the audio.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli_runs import train_grpo_command
from tests.helpers.tiny_multimodal import save_tiny_audio_model, save_tiny_vl_model

COMMON = [
    "data.eval=null",
    "reward.sources=[{type: choice}]",
    "rollout.max_new_tokens=1",
    "rollout.prompts_per_step=8",
    "rollout.n_samples_per_prompt=4",
    "rollout.forward_micro_batch_size=32",
    "train.micro_batch_size=32",
    "optim.lr=3e-3",
    "logging.progress=false",
]


def _train(model_dir: Path, run_dir: Path, *overrides: str) -> list[float]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.getcwd()}
    command = train_grpo_command(model_dir, run_dir, *COMMON, *overrides)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [row["reward/mean"] for row in rows if "reward/mean" in row]


@pytest.mark.slow
def test_grpo_learns_the_visual_colour_task(tmp_path: Path) -> None:
    model = save_tiny_vl_model(tmp_path / "model")
    rewards = _train(
        model,
        tmp_path / "run",
        "model.modality=vision-language",  # vision tower frozen (the default)
        "data.train.builtin=visual_colour",
        "data.train.num_builtin=256",
        "rollout.n_samples_per_prompt=8",
        "rollout.forward_micro_batch_size=64",
        "train.micro_batch_size=64",
        "train.total_steps=120",
    )
    assert sum(rewards[:5]) / 5 < 0.5  # below chance (red / blue) at the start
    assert sum(rewards[-10:]) / 10 >= 0.9
    # the exported model loads for evaluation: weights, tokenizer and image processor
    assert (tmp_path / "run" / "final_model" / "preprocessor_config.json").is_file()


@pytest.mark.slow
def test_grpo_learns_the_audio_tone_task(tmp_path: Path) -> None:
    model = save_tiny_audio_model(tmp_path / "model")
    rewards = _train(
        model,
        tmp_path / "run",
        "model.modality=audio-language",
        "data.train.builtin=tones",
        "data.train.num_builtin=64",
        "rollout.n_samples_per_prompt=8",
        "rollout.forward_micro_batch_size=64",
        "train.micro_batch_size=64",
        "train.total_steps=80",
    )
    assert sum(rewards[:5]) / 5 < 0.5  # below chance (first / second) at the start
    assert sum(rewards[-10:]) / 10 >= 0.9
