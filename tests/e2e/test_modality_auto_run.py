"""A tiny Qwen2-VL directory trains as a vision-language run with no modality setting
(``model.modality: auto``), and the run directory records the resolved modality."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.helpers.cli_runs import TINY, run_train
from tests.helpers.tiny_multimodal import save_tiny_vl_model


def test_a_vl_checkpoint_trains_as_vision_language_without_a_flag(tmp_path: Path) -> None:
    model = save_tiny_vl_model(tmp_path / "vl", byte_level=True)
    run_dir = tmp_path / "run"
    run_train(
        model,
        run_dir,
        *TINY,
        "train.total_steps=1",
        "data.train.builtin=visual_colour",
        "reward.sources=[{type: choice}]",
        "rollout.max_new_tokens=1",
    )
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["model"]["modality"] == "vision-language"
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert any("reward/mean" in row for row in rows)  # a step ran on the image prompts
