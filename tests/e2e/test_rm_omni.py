"""`lightrft rm train --modality omni` on preference pairs whose prompts hold an image and a
clip together, on a tiny random Qwen2.5-Omni thinker saved with its processors; `rm eval` of
the export reads it back (modality from the card) and gives the run's held-out figures."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lightrft.entrypoints.cli import main
from tests.helpers.tiny_multimodal import noise_image, write_wav
from tests.helpers.tiny_omni import save_tiny_omni_thinker

RATE = 16_000


def _pairs(folder: Path, n: int) -> list[dict[str, object]]:
    rows = []
    for i in range(n):
        noise_image(56, 56, i).save(folder / f"{i}.png")
        t = np.arange(RATE // 4) / RATE
        write_wav(folder / f"{i}.wav", 0.4 * np.sin(2 * np.pi * (300 + 100 * i) * t), RATE)
        rows.append(
            {"prompt": "Which is it ?", "images": [f"{i}.png"], "audio": [f"{i}.wav"],
             "chosen": "yes" if i % 2 else "no", "rejected": "no" if i % 2 else "yes"}
        )  # fmt: skip
    return rows


@pytest.mark.slow  # about 30 s on the shared 2-core CPU, mostly imports
def test_omni_reward_model_trains_and_its_export_evaluates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = save_tiny_omni_thinker(tmp_path / "model")
    rows = _pairs(tmp_path, 8)
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:6]))
    (tmp_path / "held.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[6:]))
    media = ["--modality", "omni", "--images-key", "images", "--audios-key", "audio"]
    argv = ["rm", "train", "--model", str(model), "--output", str(tmp_path / "rm"), *media]
    data = ["--data", str(tmp_path / "train.jsonl"), "--eval-data", str(tmp_path / "held.jsonl")]
    steps = ["--batch-size", "2", "--micro-batch-size", "2", "--epochs", "1", "--lr", "1e-3"]
    assert main([*argv, *data, *steps]) == 0
    summary = json.loads((tmp_path / "rm" / "summary.json").read_text())
    assert summary["steps"] == 3 and summary["eval_pairs"] == 2
    card = json.loads((Path(summary["model"]) / "lightrft_reward.json").read_text())
    assert card["modality"] == "omni"
    capsys.readouterr()
    held = ["--data", str(tmp_path / "held.jsonl"), "--images-key", "images"]
    assert main(["rm", "eval", "--model", summary["model"], *held, "--audios-key", "audio"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["eval/margin_mean"] == pytest.approx(summary["eval/margin_mean"], rel=1e-4)
