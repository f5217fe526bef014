"""`lightrft train grpo model.modality=omni` on a tiny Qwen2.5-Omni thinker: rows with an
image and a clip, an image, a clip or text only, through the real data layer, HF engine,
policy, optimizer and final export. The trained language model changes, the frozen vision
tower does not, and the exported directory loads again (weights and both processors)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.torch import load_file

from lightrft.adapters.hf.multimodal_loading import load_media_processors
from tests.helpers.cli_runs import final_weights, run_train
from tests.helpers.omni_mixed import write_mixed_rows
from tests.helpers.tiny_multimodal import noise_image, write_wav
from tests.helpers.tiny_omni import save_tiny_omni_thinker

RATE = 16_000
TWO_STEPS = (
    "model.modality=omni",
    "data.eval=null",
    "reward.sources=[{type: python, function: 'tests.helpers.toy_rewards:text_checksum'}]",
    "train.total_steps=2",
    "rollout.n_samples_per_prompt=2",
    "rollout.max_new_tokens=3",
    "optim.lr=1e-2",
    "logging.progress=false",
)


def _wav(path: Path, freq: float) -> str:
    return write_wav(path, np.sin(2 * np.pi * freq * np.arange(RATE // 4) / RATE) * 0.5, RATE)


def _png(path: Path, seed: int) -> str:
    noise_image(40 + 10 * seed, 40, seed).save(path)
    return path.name


def _rows(tmp_path: Path) -> list[dict[str, Any]]:
    image, clip = _png(tmp_path / "b.png", 2), _wav(tmp_path / "b.wav", 880)
    both = {"images": _png(tmp_path / "a.png", 1), "audio": _wav(tmp_path / "a.wav", 440)}
    return [
        {"prompt": "What do you see and hear ?", "reference": "x", **both},
        {"prompt": "What colour ?", "reference": "x", "images": image, "audio": []},
        {"prompt": "Which tone ?", "reference": "x", "images": [], "audio": clip},
        {"prompt": "Plain words", "reference": "x", "images": [], "audio": []},
    ]


def _two_steps_changed(model: Path, run: Path) -> set[str]:
    """The weights the run's 2 logged steps changed (checks both steps were logged)."""
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in metrics if "reward/mean" in row] == [1, 2]
    before = load_file(str(model / "model.safetensors"))
    after = final_weights(run)
    assert before.keys() == after.keys()
    return {k for k in before if not bool((before[k] == after[k]).all())}


@pytest.mark.slow
def test_grpo_steps_on_omni_rows_change_the_weights(tmp_path: Path) -> None:
    model = save_tiny_omni_thinker(tmp_path / "model")
    data = tmp_path / "omni.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in _rows(tmp_path)))
    run = tmp_path / "run"
    run_train(
        model,
        run,
        f"data.train.path={data}",
        "data.train.images_key=images",
        "data.train.audios_key=audio",
        *TWO_STEPS,
        "rollout.prompts_per_step=4",
    )
    changed = _two_steps_changed(model, run)
    assert any(k.startswith("model.layers.") for k in changed)  # the language model trained
    assert any(k.startswith("audio_tower.") for k in changed)  # the audio encoder too
    assert not any(k.startswith("visual.") for k in changed)  # the vision tower is frozen
    processors = load_media_processors(run / "final_model")  # exported with both parts
    assert processors.feature_extractor.sampling_rate == RATE
    assert processors.image_processor.merge_size == 2


@pytest.mark.slow
def test_grpo_steps_on_a_row_mixing_clips_images_and_a_video(tmp_path: Path) -> None:
    """The row of chat parts audio, image, text, video, audio, image, text (files on disk)
    with an image row and a text row: two steps train, and the audio encoder changes."""
    model = save_tiny_omni_thinker(tmp_path / "model")
    data = write_mixed_rows(tmp_path / "data")
    run = tmp_path / "run"
    run_train(
        model,
        run,
        f"data.train.path={data}",
        *TWO_STEPS,
        "rollout.prompts_per_step=3",
    )
    changed = _two_steps_changed(model, run)
    assert any(k.startswith("model.layers.") for k in changed)
    assert any(k.startswith("audio_tower.") for k in changed)
