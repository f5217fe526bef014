"""HF ``datasets`` Image / Audio feature columns in parquet and arrow files (the hub layout):
read as stored and decoded here, so a file with an ``Audio`` column works without the
libraries ``datasets`` would decode it with, and a bad item names its file, row and key."""

from __future__ import annotations

from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image

from lightrft.adapters.datasets import BadRowError, HfPromptDataset, RowSpec, load_table
from lightrft.adapters.datasets.placeholders import MediaPlaceholders
from tests.helpers.hf_media_files import (
    png_bytes,
    wav_bytes,
    write_geo3k_parquet,
    write_hf_parquet,
)
from tests.helpers.tiny_multimodal import tiny_mm_tokenizer

AUDIO_FEATURES = datasets.Features(
    {
        "prompt": datasets.Value("string"),
        "reference": datasets.Value("string"),
        "audio": datasets.Audio(sampling_rate=16000),
    }
)
PADS = MediaPlaceholders(image="<|image_pad|>", audio="<|AUDIO|>")


def tone(seconds: float, hz: float = 440.0, rate: int = 16000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def test_a_geo3k_schema_parquet_reads_through_the_column_mapping(tmp_path: Path) -> None:
    red, blue = Image.new("RGB", (30, 20), "red"), Image.new("RGB", (20, 20), "blue")
    path = write_geo3k_parquet(
        tmp_path / "geo.parquet",
        [("<image>Find x.", [red], "3"), ("Compare <image> and <image>.", [red, blue], "1.5")],
    )
    assert isinstance(load_table(path).features["images"].feature, datasets.Image)  # declared
    spec = RowSpec(
        input_key="problem", reference_key="answer", images_key="images", placeholders=PADS
    )
    data = HfPromptDataset(path, tiny_mm_tokenizer(), spec=spec, name="geo")
    assert len(data) == 2 and [data[i].reference for i in range(2)] == ["3", "1.5"]
    first, second = data[0].multimodal["images"], data[1].multimodal["images"]
    assert [im.getpixel((0, 0)) for im in second] == [(255, 0, 0), (0, 0, 255)]
    assert first[0].size == (30, 20)
    pad = "<|vision_start|><|image_pad|><|vision_end|>"
    assert f"{pad}Find x." in data[0].prompt_text  # at the <image> marker
    assert f"Compare {pad} and {pad}." in data[1].prompt_text


def test_an_audio_feature_column_decodes_without_torchcodec(tmp_path: Path) -> None:
    (tmp_path / "clips").mkdir()
    (tmp_path / "clips" / "b.wav").write_bytes(wav_bytes(tone(0.3), 16000))
    path = write_hf_parquet(
        tmp_path / "tones.parquet",
        {
            "prompt": ["which is higher?", "and here?"],
            "reference": ["first", "second"],
            "audio": [
                {"bytes": wav_bytes(tone(0.2), 16000), "path": "a.wav"},  # stored bytes
                {"bytes": None, "path": "clips/b.wav"},  # a file next to the data
            ],
        },
        AUDIO_FEATURES,
    )
    assert isinstance(load_table(path).features["audio"], datasets.Audio)
    spec = RowSpec(audios_key="audio", audio_sampling_rate=16000, placeholders=PADS)
    data = HfPromptDataset(path, tiny_mm_tokenizer(), spec=spec, name="tones")
    (clip, rate), (other, other_rate) = (data[i].multimodal["audios"][0] for i in range(2))
    assert rate == other_rate == 16000 and clip.shape == (3200,) and other.shape == (4800,)
    # written as int(x * 32767) (truncated), read back as n / 32768: within 2 steps
    np.testing.assert_allclose(clip, tone(0.2), atol=2 / 32767)
    assert data[0].prompt_text.count("<|AUDIO|>") == 1


def test_stored_audio_that_is_not_wav_or_at_another_rate_names_the_row(tmp_path: Path) -> None:
    path = write_hf_parquet(
        tmp_path / "bad.parquet",
        {
            "prompt": ["ok", "flac", "slow"],
            "reference": ["1", "1", "1"],
            "audio": [
                {"bytes": wav_bytes(tone(0.1), 16000), "path": "ok.wav"},
                {"bytes": b"fLaC\x00\x00\x00\x22 not decodable here", "path": "x.flac"},
                {"bytes": wav_bytes(tone(0.1, rate=8000), 8000), "path": "slow.wav"},
            ],
        },
        AUDIO_FEATURES,
    )
    spec = RowSpec(audios_key="audio", audio_sampling_rate=16000)
    with pytest.raises(BadRowError) as caught:
        HfPromptDataset(path, tiny_mm_tokenizer(), spec=spec, name="bad")
    message = str(caught.value)
    assert f"{path} row 1: audio data of x.flac is not a PCM .wav file" in message
    assert "convert it to 16-bit .wav" in message and "'audio'" in message
    assert f"{path} row 2: audio data of slow.wav is sampled at 8000 Hz, expected 16000" in message
    skipping = RowSpec(audios_key="audio", audio_sampling_rate=16000, on_bad_row="skip")
    kept = HfPromptDataset(path, tiny_mm_tokenizer(), spec=skipping, name="bad")
    assert len(kept) == 1 and kept.stats.skipped_bad_rows == 2


def test_an_arrow_file_with_an_image_feature(tmp_path: Path) -> None:
    features = datasets.Features(
        {"q": datasets.Value("string"), "a": datasets.Value("string"), "pic": datasets.Image()}
    )
    table = datasets.Dataset.from_dict(
        {"q": ["colour?"], "a": ["lime"], "pic": [{"bytes": png_bytes(Image.new("RGB", (4, 4), "lime")), "path": None}]},
        features=features,
    )  # fmt: skip
    table.save_to_disk(str(tmp_path / "saved"))
    arrow = next((tmp_path / "saved").glob("*.arrow"))
    spec = RowSpec(input_key="q", reference_key="a", images_key="pic")
    data = HfPromptDataset(arrow, tiny_mm_tokenizer(), spec=spec)
    assert data[0].multimodal["images"][0].getpixel((1, 1)) == (0, 255, 0)
    assert data[0].reference == "lime"


def test_an_undecodable_stored_image_names_the_file_row_and_key(tmp_path: Path) -> None:
    path = write_geo3k_parquet(
        tmp_path / "g.parquet", [("<image>x", [Image.new("RGB", (4, 4))], "1")]
    )
    broken = write_hf_parquet(
        tmp_path / "broken.parquet",
        {"images": [[{"bytes": b"\x89PNG garbage", "path": None}]], "problem": ["<image>x"], "answer": ["1"]},
        load_table(path).features,
    )  # fmt: skip
    spec = RowSpec(input_key="problem", reference_key="answer", images_key="images")
    with pytest.raises(
        BadRowError, match=rf"{broken} row 0: the image data holds no readable image"
    ):
        HfPromptDataset(broken, tiny_mm_tokenizer(), spec=spec)
