"""The scripts of examples/ run on a CPU with a tiny random model (one variable, MODEL)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.tiny_multimodal import save_tiny_vl_model

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(script: str, tmp_path: Path, *args: str, stdin: str = "", **env: str) -> str:
    environment = {
        **os.environ,
        "PYTHONPATH": os.getcwd(),
        "OMP_NUM_THREADS": "1",
        "PYTHON": sys.executable,
        "LIGHTRFT": f"{sys.executable} -m lightrft.entrypoints.cli",
        "RUN_DIR": str(tmp_path / "run"),
        **env,
    }
    done = subprocess.run(
        ["bash", str(EXAMPLES / script), *args],
        env=environment,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("script", ["gsm8k_geo3k/run_grpo_gsm8k.sh", "grm/run_grpo_with_judge.sh"])
def test_grpo_examples_train_and_export(script: str, tiny_dir: Path, tmp_path: Path) -> None:
    _run(script, tmp_path, MODEL=str(tiny_dir))
    assert (tmp_path / "run" / "final_model" / "model.safetensors").is_file()


@pytest.mark.slow
def test_geo3k_example_on_a_tiny_vision_language_model(tmp_path: Path) -> None:
    model = save_tiny_vl_model(tmp_path / "vl")
    _run("gsm8k_geo3k/run_grpo_geo3k_vl.sh", tmp_path, MODEL=str(model))
    assert (tmp_path / "run-data" / "img_000.png").is_file()  # the drawn rows
    assert (tmp_path / "run" / "final_model" / "model.safetensors").is_file()


@pytest.mark.slow
def test_scalar_rm_example(tiny_dir: Path, tmp_path: Path) -> None:
    _run("srm_training/train_scalar_rm.sh", tmp_path, MODEL=str(tiny_dir))
    assert (tmp_path / "run" / "model" / "config.json").is_file()


@pytest.mark.slow
def test_chat_example_answers_piped_lines(tiny_dir: Path, tmp_path: Path) -> None:
    out = _run(
        "chat/chat.sh",
        tmp_path,
        "--max-new-tokens",
        "3",
        stdin="hi\n/reset\nyo\n",
        MODEL=str(tiny_dir),
    )
    assert out.count("model> ") == 2 and "(conversation reset)" in out


def test_the_vision_example_asks_for_a_model(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHON": sys.executable}
    env.pop("MODEL", None)
    done = subprocess.run(
        ["bash", str(EXAMPLES / "gsm8k_geo3k/run_grpo_geo3k_vl.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and "set MODEL to a Qwen2-VL" in done.stderr
