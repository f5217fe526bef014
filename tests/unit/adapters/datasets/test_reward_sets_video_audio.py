"""Video and audio reward data sets read from fixtures in their published layouts:
Rapidata (t2v, i2v), OmniRewardBench (t2v, t2a), Audio-Alpaca."""

from __future__ import annotations

from pathlib import Path

import datasets
import numpy as np
import pytest

from lightrft.adapters.datasets.bad_rows import BadRowsError
from lightrft.adapters.datasets.reward_sets import REWARD_DATASETS, RewardSetOptions
from tests.helpers.reward_set_files import (
    FLOAT,
    RATE,
    STRING,
    colour_of,
    image_value,
    level_wav,
    rendered,
    renderer,
    touch_video,
    write_parquet,
)


def load(name: str, path: Path, on_bad_row: str = "error", rate: int | None = None):  # noqa: ANN201
    options = RewardSetOptions(on_bad_row=on_bad_row, audio_sampling_rate=rate)  # type: ignore[arg-type]
    return REWARD_DATASETS.get(name).load(path, renderer(), options)


# --- Rapidata t2v / i2v: data/train-*.parquet, videos under videos/ next to data/

RAPIDATA_T2V = {
    "prompt": STRING, "file_name1": STRING, "file_name2": STRING,
    **{f"weighted_results{i}_{m}": FLOAT
       for i in (1, 2) for m in ("Preference", "Coherence", "Alignment")},
}  # fmt: skip


def scores(first: tuple[float, float, float], second: tuple[float, float, float]) -> dict:
    names = ("Preference", "Coherence", "Alignment")
    return {
        **{f"weighted_results1_{m}": v for m, v in zip(names, first, strict=True)},
        **{f"weighted_results2_{m}": v for m, v in zip(names, second, strict=True)},
    }


def test_rapidata_t2v_chooses_the_higher_criteria_sum(tmp_path: Path) -> None:
    one, two = (
        touch_video(tmp_path / "videos" / "a.mp4"),
        touch_video(tmp_path / "videos" / "b.mp4"),
    )
    rows = [
        # sums 1.5 vs 1.2: video 1 chosen
        {"prompt": "a wave", "file_name1": "a.mp4", "file_name2": "b.mp4",
         **scores((0.6, 0.5, 0.4), (0.4, 0.5, 0.3))},
        # sums 0.9 vs 0.9: a tie
        {"prompt": "a leaf", "file_name1": "a.mp4", "file_name2": "b.mp4",
         **scores((0.3, 0.3, 0.3), (0.2, 0.4, 0.3))},
        # a missing criterion counts 0: 0.5 vs 0.7, video 2 chosen
        {"prompt": "a moon", "file_name1": "a.mp4", "file_name2": "b.mp4",
         **scores((0.5, None, None), (0.2, 0.5, None))},  # type: ignore[arg-type]
    ]  # fmt: skip
    path = write_parquet(tmp_path / "data" / "train-00000.parquet", rows, RAPIDATA_T2V)
    loaded = load("rapidata-t2v", tmp_path / "data")  # a folder of shards
    assert loaded.ties == 1
    first, second = loaded.records
    assert (first.uid, first.prompt) == ("train-00000:0", rendered("a wave"))
    assert (first.chosen, first.rejected) == ("<video>", "<video>")
    assert first.multimodal == {
        "chosen": {"videos": [str(one.resolve())]},
        "rejected": {"videos": [str(two.resolve())]},
    }
    assert second.uid == "train-00000:2"
    assert second.multimodal["chosen"]["videos"] == [str(two.resolve())]
    assert load("rapidata-t2v", path).records == loaded.records  # one file reads the same


def test_rapidata_t2v_missing_video_and_scores_are_named(tmp_path: Path) -> None:
    touch_video(tmp_path / "videos" / "a.mp4")
    rows = [
        {"prompt": "a wave", "file_name1": "a.mp4", "file_name2": "gone.mp4",
         **scores((0.6, 0.5, 0.4), (0.4, 0.5, 0.3))},
        {"prompt": "a leaf", "file_name1": "a.mp4", "file_name2": "a.mp4",
         **scores((None, None, None), (None, None, None))},  # type: ignore[arg-type]
    ]  # fmt: skip
    write_parquet(tmp_path / "data" / "train.parquet", rows, RAPIDATA_T2V)
    with pytest.raises(BadRowsError) as info:
        load("rapidata-t2v", tmp_path / "data" / "train.parquet")
    gone = tmp_path / "videos" / "gone.mp4"
    assert str(info.value).splitlines() == [
        "2 bad rows:",
        f"  train.parquet row 0: video file {gone} does not exist (from) 'file_name2'",
        "  train.parquet row 1: missing key 'weighted_results1_Preference'",
    ]


def test_rapidata_i2v_puts_the_initial_image_in_the_prompt(tmp_path: Path) -> None:
    one = touch_video(tmp_path / "videos" / "seedance" / "a.mp4")
    two = touch_video(tmp_path / "videos" / "b.mp4")
    features = {**RAPIDATA_T2V, "prompt_asset": datasets.Image()}
    row = {"prompt": "make it move", "prompt_asset": image_value((9, 8, 7)),
           "file_name1": "https://cdn.example/seedance/a.mp4", "file_name2": "b.mp4",
           **scores((0.1, 0.1, 0.1), (0.5, 0.5, 0.5))}  # fmt: skip
    path = write_parquet(tmp_path / "data" / "train.parquet", [row], features)
    (pair,) = load("rapidata-i2v", path).records
    assert pair.prompt == rendered("<IMG>make it move")
    (initial,) = pair.multimodal["images"]
    assert colour_of(initial) == (9, 8, 7)
    assert pair.multimodal["chosen"] == {"videos": [str(two.resolve())]}
    assert pair.multimodal["rejected"] == {"videos": [str(one.resolve())]}


# --- OmniRewardBench t2v / t2a: <root>/<task>/<file>.parquet, media under <root>/media_data


def test_omnirewardbench_t2v_and_t2a(tmp_path: Path) -> None:
    x, y = (touch_video(tmp_path / "media_data" / "t2v" / n) for n in ("x.mp4", "y.mp4"))
    t2v = {"id": STRING, "prompt": STRING, "response1": STRING, "response2": STRING,
           "criteria_preference": STRING}  # fmt: skip
    row = {"id": "7", "prompt": "a storm", "response1": "t2v/x.mp4", "response2": "t2v/y.mp4",
           "criteria_preference": "response2"}  # fmt: skip
    (pair,) = load(
        "omnirewardbench-t2v", write_parquet(tmp_path / "t2v" / "test.parquet", [row], t2v)
    ).records
    assert (pair.uid, pair.prompt) == ("test:0", rendered("a storm"))
    assert pair.multimodal == {
        "chosen": {"videos": [str(y.resolve())]},
        "rejected": {"videos": [str(x.resolve())]},
    }

    audio_dir = tmp_path / "media_data" / "t2a"
    audio_dir.mkdir(parents=True)
    (audio_dir / "loud.wav").write_bytes(level_wav(0.5))
    (audio_dir / "soft.wav").write_bytes(level_wav(0.25))
    t2a = {"id": STRING, "prompt": STRING, "response1_path": STRING, "response2_path": STRING,
           "criteria_preference": STRING}  # fmt: skip
    row = {"id": "8", "prompt": "rain", "response1_path": "t2a/loud.wav",
           "response2_path": "t2a/soft.wav", "criteria_preference": "response1"}  # fmt: skip
    path = write_parquet(tmp_path / "t2a" / "test.parquet", [row], t2a)
    (pair,) = load("omnirewardbench-t2a", path).records
    assert (pair.chosen, pair.rejected) == ("<audio>", "<audio>")
    ((chosen, chosen_rate),) = pair.multimodal["chosen"]["audios"]
    ((rejected, _),) = pair.multimodal["rejected"]["audios"]
    assert chosen_rate == RATE
    np.testing.assert_allclose(chosen, 0.5, atol=1e-4)
    np.testing.assert_allclose(rejected, 0.25, atol=1e-4)


# --- Audio-Alpaca: parquet rows {prompt, chosen, rejected (HF Audio as stored), strategy}

ALPACA = {"prompt": STRING, "chosen": datasets.Audio(), "rejected": datasets.Audio(),
          "strategy": STRING}  # fmt: skip


def alpaca_row(prompt: str, chosen: float, rejected: float) -> dict:
    return {"prompt": prompt, "strategy": "max-min",
            "chosen": {"bytes": level_wav(chosen), "path": "c.wav"},
            "rejected": {"bytes": level_wav(rejected), "path": "r.wav"}}  # fmt: skip


def test_audio_alpaca_decodes_both_clips(tmp_path: Path) -> None:
    rows = [alpaca_row("a dog barks", 0.5, -0.5), alpaca_row("a bell rings", 0.125, 0.75)]
    path = write_parquet(tmp_path / "data" / "train-0.parquet", rows, ALPACA)
    loaded = load("audio-alpaca", tmp_path / "data", rate=RATE)
    assert [(p.uid, p.prompt) for p in loaded.records] == [
        ("train-0:0", rendered("a dog barks")),
        ("train-0:1", rendered("a bell rings")),
    ]
    levels = [
        (float(p.multimodal["chosen"]["audios"][0][0][0]),
         float(p.multimodal["rejected"]["audios"][0][0][0]))
        for p in loaded.records
    ]  # fmt: skip
    np.testing.assert_allclose(levels, [(0.5, -0.5), (0.125, 0.75)], atol=1e-4)
    with pytest.raises(BadRowsError) as info:
        load("audio-alpaca", path, rate=16000)
    assert str(info.value).splitlines()[1] == (
        "  train-0.parquet row 0: audio data of c.wav is sampled at 8000 Hz, expected 16000 Hz "
        "(resample it); in 'chosen'"
    )
