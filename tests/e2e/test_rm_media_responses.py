"""`lightrft rm train` on reward data sets whose responses are media, in their published
layouts (fixtures, no download): HPDv3 images and Rapidata t2v videos on a tiny random
Qwen2-VL, Audio-Alpaca clips on a tiny random Qwen2-Audio; one step each, and `rm eval` of
the export reads the same sets to the same accuracy."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import numpy as np
import pytest

from lightrft.entrypoints.cli import main
from tests.helpers.hf_media_files import wav_bytes
from tests.helpers.reward_set_files import FLOAT, STRING, colour_png, write_json, write_parquet
from tests.helpers.tiny_multimodal import save_tiny_audio_model, save_tiny_vl_model
from tests.helpers.tiny_video import plain_frames, write_video


def _hpdv3(root: Path, n: int) -> Path:
    colours = [(200, 0, 0), (0, 200, 0), (0, 0, 200)]
    for i, rgb in enumerate(colours):
        colour_png(root / "images" / f"{i}.png", rgb)
    rows = [
        {"prompt": f"picture {i}", "path1": f"images/{i % 3}.png",
         "path2": f"images/{(i + 1) % 3}.png"}
        for i in range(n)
    ]  # fmt: skip
    return write_json(root / "train.json", rows)


def _rapidata_t2v(root: Path, n: int) -> Path:
    videos = root / "videos"
    videos.mkdir(parents=True)
    write_video(videos / "a.mp4", plain_frames([(250, 0, 0)] * 4, size=32), fps=4)
    write_video(videos / "b.mp4", plain_frames([(0, 0, 250)] * 4, size=32), fps=4)
    criteria = ("Preference", "Coherence", "Alignment")
    features = {"prompt": STRING, "file_name1": STRING, "file_name2": STRING,
                **{f"weighted_results{i}_{m}": FLOAT for i in (1, 2) for m in criteria}}  # fmt: skip
    rows = [
        {"prompt": f"clip {i}", "file_name1": "a.mp4", "file_name2": "b.mp4",
         **{f"weighted_results1_{m}": 0.6 for m in criteria},
         **{f"weighted_results2_{m}": 0.2 for m in criteria}}
        for i in range(n)
    ]  # fmt: skip
    return write_parquet(root / "data" / "train.parquet", rows, features)


def _train_and_eval(
    argv: list[str], data: str, out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = ["--batch-size", "4", "--micro-batch-size", "4", "--total-steps", "1"]
    run = ["rm", "train", *argv, "--output", str(out), "--data", data, "--eval-fraction", "0.25"]
    assert main([*run, *steps]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 1 and summary["train_pairs"] + summary["eval_pairs"] >= 6
    capsys.readouterr()
    assert main(["rm", "eval", "--model", summary["model"], "--data", data]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["pairs"] == summary["train_pairs"] + summary["eval_pairs"]
    assert np.isfinite(report["eval/margin_mean"])


@pytest.mark.slow  # ~15 s on the shared 2-core CPU
def test_image_video_and_audio_response_sets_train(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vl = save_tiny_vl_model(tmp_path / "vl", byte_level=True)
    images = _hpdv3(tmp_path / "hpdv3", 6)
    videos = _rapidata_t2v(tmp_path / "rapidata", 4)
    vl_args = ["--model", str(vl), "--modality", "vision-language", "--max-pixels", "3136"]
    data = f"hpdv3:{images},rapidata-t2v:{videos.parent}"
    _train_and_eval([*vl_args, "--fps", "2", "--max-frames", "2"], data, tmp_path / "rm-vl", capsys)

    audio = save_tiny_audio_model(tmp_path / "audio")
    clip = {"prompt": STRING, "chosen": datasets.Audio(), "rejected": datasets.Audio()}
    tone = np.sin(np.linspace(0, 200, 4000)) * 0.5
    rows = [
        {"prompt": f"sound {i}", "chosen": {"bytes": wav_bytes(tone, 16000), "path": "c.wav"},
         "rejected": {"bytes": wav_bytes(tone * 0.1, 16000), "path": "r.wav"}}
        for i in range(8)
    ]  # fmt: skip
    alpaca = write_parquet(tmp_path / "alpaca" / "train.parquet", rows, clip)
    audio_args = ["--model", str(audio), "--modality", "audio-language"]
    _train_and_eval(audio_args, f"audio-alpaca:{alpaca}", tmp_path / "rm-audio", capsys)


def test_a_text_reward_model_still_refuses_media_responses(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    images = _hpdv3(tmp_path / "hpdv3", 2)
    argv = ["rm", "train", "--model", str(tiny_dir), "--output", str(tmp_path / "o")]
    assert main([*argv, "--data", f"hpdv3:{images}"]) == 2
    assert "hpdv3 gives images responses; this trainer reads text" in capsys.readouterr().err
