"""`lightrft rm train` on image preference pairs with a tiny random Qwen2-VL backbone: the
preferred answer names the shape's colour, so only a model that sees the image can beat
chance (each answer is chosen in half of the pairs); `lightrft rm eval` of the export agrees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightrft.adapters.datasets.synthetic_visual import visual_problems
from lightrft.entrypoints.cli import main
from tests.helpers.tiny_multimodal import save_tiny_vl_model


def write_pairs(directory: Path, n: int) -> list[dict[str, object]]:
    rows = []
    for i, problem in enumerate(visual_problems(n, seed=0)):
        problem["images"][0].save(directory / f"{i}.png")
        answer = str(problem["reference"])
        other = "blue" if answer == "red" else "red"
        rows.append(
            {"prompt": "What colour is the shape ?", "images": [f"{i}.png"], "chosen": answer,
             "rejected": other}
        )  # fmt: skip
    return rows


@pytest.mark.slow  # up to 3.5 min at load 10 on the shared 2-core CPU (2.5 s at load 3)
def test_vision_reward_model_learns_the_colour_preference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = save_tiny_vl_model(tmp_path / "model")
    rows = write_pairs(tmp_path, 96)
    assert sum(r["chosen"] == "red" for r in rows[80:]) not in (0, 16)  # both answers held out
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:80]))
    (tmp_path / "held.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[80:]))
    media = ["--modality", "vision-language", "--images-key", "images"]
    argv = ["rm", "train", "--model", str(model), "--output", str(tmp_path / "rm"), *media]
    data = ["--data", str(tmp_path / "train.jsonl"), "--eval-data", str(tmp_path / "held.jsonl")]
    steps = ["--batch-size", "16", "--micro-batch-size", "8", "--epochs", "5", "--lr", "1e-3"]
    assert main([*argv, *data, *steps]) == 0
    summary = json.loads((tmp_path / "rm" / "summary.json").read_text())
    assert summary["steps"] == 25 and summary["eval_pairs"] == 16
    # observed 0.94 (15 of 16); a text-only scorer cannot pass 0.5 here
    assert summary["eval/accuracy"] >= 0.8
    capsys.readouterr()
    held = ["--data", str(tmp_path / "held.jsonl"), "--images-key", "images"]
    assert main(["rm", "eval", "--model", summary["model"], *held]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["eval/accuracy"] == summary["eval/accuracy"]
    assert report["eval/margin_mean"] == pytest.approx(summary["eval/margin_mean"], rel=1e-4)
