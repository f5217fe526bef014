"""`lightrft train` on tiny vision- / audio-language models with bad media rows: found while
the data is built (before step 1), named (file, row, key, what was expected), and with
``data.train.on_bad_row=skip`` skipped, counted and reported (console, metrics.jsonl,
summary.json) while the run trains on the rest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lightrft.entrypoints.cli import main
from tests.helpers.tiny_multimodal import (
    noise_image,
    save_tiny_audio_model,
    save_tiny_vl_model,
    write_wav,
)

RUN = [
    "train.total_steps=2",
    "rollout.max_new_tokens=1",
    "rollout.prompts_per_step=2",
    "rollout.n_samples_per_prompt=2",
    "data.eval=null",
    "reward.sources=[{type: choice}]",
    "logging.progress=false",
    "checkpoint.export_final=false",
]


def _wav(path: Path, rate: int) -> str:
    return write_wav(path, np.sin(np.arange(rate // 10) * 0.3) * 0.5, rate)  # 0.1 s


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _train(
    capsys: pytest.CaptureFixture[str], model: Path, run_dir: Path, *extra: str
) -> tuple[int, str]:
    capsys.readouterr()
    argv = ["train", "grpo", f"model.path={model}", f"logging.run_dir={run_dir}"]
    code = main([*argv, *RUN, *extra])
    return code, capsys.readouterr().err


def _trained_steps(run_dir: Path) -> list[int]:
    metrics = run_dir / "metrics.jsonl"
    if not metrics.exists():
        return []
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    return [row["step"] for row in rows if "reward/mean" in row]


def _strict_then_skip(
    capsys: pytest.CaptureFixture[str], model: Path, modality: str, data: Path, media_key: str
) -> tuple[str, str, dict[str, Any]]:
    """Trains on ``data`` with ``on_bad_row=error`` (it must stop with status 2 before step
    1), then with ``skip`` (it must finish); returns both stderrs and the second summary."""
    tmp_path = data.parent
    options = (f"model.modality={modality}", f"data.train.path={data}", f"data.train.{media_key}")
    code, strict = _train(capsys, model, tmp_path / "strict", *options)
    assert code == 2 and "Traceback" not in strict
    assert _trained_steps(tmp_path / "strict") == []  # found before any step trained
    skip = ("data.train.on_bad_row=skip",)
    code, skipping = _train(capsys, model, tmp_path / "skip", *options, *skip)
    assert code == 0, skipping
    summary = json.loads((tmp_path / "skip" / "summary.json").read_text())
    return strict, skipping, summary


@pytest.fixture(scope="module")
def audio_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_audio_model(tmp_path_factory.mktemp("audio") / "model")


def test_an_8khz_clip_is_found_when_the_data_is_built(
    audio_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Six rows, the 8 kHz one at row 5; data.train.audio_sampling_rate unset: the model's
    feature extractor rate (16 kHz) is required. Before: steps 1-2 trained, step 3 died."""
    rows = [
        {
            "prompt": "Which tone is higher ?",
            "reference": "first",
            "audio": _wav(tmp_path / f"{i}.wav", 16000),
        }
        for i in range(5)
    ]
    rows.append(
        {
            "prompt": "Which tone ?",
            "reference": "second",
            "audio": _wav(tmp_path / "slow.wav", 8000),
        }
    )
    data = _jsonl(tmp_path / "tones.jsonl", rows)
    strict, skipping, summary = _strict_then_skip(
        capsys, audio_model, "audio-language", data, "audios_key=audio"
    )
    expected = f"audio file {tmp_path / 'slow.wav'} is sampled at 8000 Hz, expected 16000 Hz"
    assert f"{data} row 5: {expected}" in strict
    assert "data.skipped_rows" in skipping and "skipped=1" in skipping
    assert summary["skipped_rows"] == 1 and summary["train_rows"] == 5 and summary["steps"] == 2
    first = json.loads((tmp_path / "skip" / "metrics.jsonl").read_text().splitlines()[0])
    assert first == {**first, "step": 0, "data/skipped_rows": 1.0, "data/train_rows": 5.0}
    assert _trained_steps(tmp_path / "skip") == [1, 2]


def test_a_raw_image_placeholder_without_an_image_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = save_tiny_vl_model(tmp_path / "model")
    noise_image(56, 56, 0).save(tmp_path / "a.png")
    rows = [
        {"prompt": "<image> What colour is the shape ?", "reference": "red", "images": ["a.png"]}
    ] * 3
    rows.insert(1, {"prompt": "<|image_pad|> What colour ?", "reference": "red", "images": []})
    data = _jsonl(tmp_path / "shapes.jsonl", rows)
    strict, _, summary = _strict_then_skip(
        capsys, model, "vision-language", data, "images_key=images"
    )
    assert f"{data} row 1: the prompt holds 1 image placeholder token(s) '<|image_pad|>'" in strict
    assert "has 0 image(s) (key 'images')" in strict and "in 'prompt'" in strict
    assert summary["skipped_rows"] == 1 and summary["train_rows"] == 3


def test_a_vision_prompt_cut_through_its_image_names_the_truncation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The image comes first and the text after it is longer than max_prompt_length: the
    left cut removes the image placeholder. The bad row says that truncation did it."""
    model = save_tiny_vl_model(tmp_path / "model")
    noise_image(56, 56, 0).save(tmp_path / "a.png")
    long = {
        "prompt": "<image> " + "What colour is it ? " * 40,
        "reference": "red",
        "images": ["a.png"],
    }
    data = _jsonl(tmp_path / "long.jsonl", [long])
    options = ("model.modality=vision-language", f"data.train.path={data}")
    code, err = _train(
        capsys,
        model,
        tmp_path / "run",
        *options,
        "data.train.images_key=images",
        "data.train.max_prompt_length=64",
    )
    assert code == 2 and "Traceback" not in err, err
    assert f"{data} row 0: the prompt was cut by " in err
    assert "tokens to max_prompt_length (64, truncate=left), cutting media placeholders" in err
    assert "the prompt holds 0 image placeholder token(s)" in err
