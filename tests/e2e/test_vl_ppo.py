"""`lightrft train ppo` on a tiny random Qwen2.5-VL with image rows: the critic (a value head
over the vision-language base model, fed the rows' images) trains beside the policy with
GAE, and a run stopped after step 1 and resumed ends bitwise equal to an uninterrupted one
(step-2 metrics, the exported policy, the critic and its optimizer state in the step-2
checkpoint).

The reward is the ``length`` source (DAPO's overlong penalty) so that the returns differ
from 0 at step 1 and the critic has something to learn; the untrained model never names a
colour, so the ``choice`` reward would be 0 everywhere. The PPO settings are those of the
original's ``run_ppo_geo3k`` as far as they fit a tiny CPU run (gamma 1, lambda 0.95, clip
0.2, value clip 0.2, KL k1 at 0.01, advantage normalisation).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers.tiny_multimodal import save_tiny_vl_model

SETTINGS = [
    "model.modality=vision-language",
    "data.train.builtin=visual_colour",
    "data.train.num_builtin=8",
    "data.eval=null",
    "reward.sources=[{type: length}]",
    "rollout.max_new_tokens=4",
    "rollout.prompts_per_step=2",
    "rollout.n_samples_per_prompt=2",
    "algorithm.gamma=1.0",
    "algorithm.lam=0.95",
    "algorithm.value_clip=0.2",
    "algorithm.kl_estimator=k1",
    "algorithm.kl_coef=0.01",
    "reward.normalize=true",
    "optim.lr=1e-3",
    "checkpoint.every=1",
    "logging.progress=false",
]
VOLATILE = ("time", "throughput/", "memory/")


def _ppo(model: Path, run: Path, *extra: str) -> None:
    command = [sys.executable, "-m", "lightrft.entrypoints.cli", "train", "ppo"]
    command += [f"model.path={model}", f"logging.run_dir={run}", *SETTINGS, *extra]
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]


def _metrics(run: Path) -> dict[int, dict[str, float]]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: {k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in rows}


def _critic_state(run: Path) -> dict[str, Any]:
    state = torch.load(
        run / "checkpoints" / "step_00000002" / "state.pt", map_location="cpu", weights_only=False
    )
    return dict(state["critic_strategy"])


def _assert_same(want: Any, got: Any, where: str) -> None:
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor) and torch.equal(want, got), where
    elif isinstance(want, dict):
        assert isinstance(got, dict) and want.keys() == got.keys(), where
        for key in want:
            _assert_same(want[key], got[key], f"{where}.{key}")
    elif isinstance(want, (list, tuple)):
        assert len(want) == len(got), where
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            _assert_same(a, b, f"{where}[{i}]")
    else:
        assert want == got, where


@pytest.mark.slow
def test_ppo_on_a_vision_language_model_trains_its_critic_and_resumes_bitwise(
    tmp_path: Path,
) -> None:
    model = save_tiny_vl_model(tmp_path / "vl25", family="qwen2_5_vl")
    full, resumed = tmp_path / "full", tmp_path / "resumed"
    _ppo(model, full, "train.total_steps=2")
    _ppo(model, resumed, "train.total_steps=1")
    assert not (resumed / "checkpoints" / "step_00000002").exists()
    _ppo(model, resumed, "--resume", "train.total_steps=2")

    metrics = _metrics(full)
    first = metrics[1]
    assert first["returns/mean"] != 0  # the length penalty reached the returns
    assert first["critic/loss"] > 0 and first["critic/grad_norm"] > 0  # the critic trained
    assert metrics[2]["value/values_mean"] != 0  # and its values moved off the zero head
    assert _metrics(resumed)[2] == metrics[2]

    want, got = _critic_state(full), _critic_state(resumed)
    weights = want["module"]
    assert any(k.startswith("backbone.visual.") for k in weights)  # the critic holds the tower
    assert {"value_head.weight", "value_head.bias"} <= weights.keys()
    assert want["optimizer"]["state"]  # Adam moments of the trained critic
    _assert_same(want, got, "critic_strategy")
    exported = [load_file(str(r / "final_model" / "model.safetensors")) for r in (full, resumed)]
    assert exported[0].keys() == exported[1].keys()
    for name in exported[0]:
        assert torch.equal(exported[0][name], exported[1][name]), name
