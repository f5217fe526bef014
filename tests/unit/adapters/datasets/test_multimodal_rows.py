"""Prompt rows with images and audio: every accepted format, and bad input named by file,
row and key (the other rows kept under on_bad_row='skip')."""

from __future__ import annotations

import base64
import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pytest
from PIL import Image

from lightrft.adapters.datasets import (
    BadRowError,
    HfPromptDataset,
    InMemoryPromptSource,
    PromptFormat,
    RowSpec,
)
from lightrft.adapters.datasets.placeholders import MediaPlaceholders
from tests.helpers.tiny_multimodal import tiny_mm_tokenizer, write_wav

VL = RowSpec(images_key="images")


def png(color: str, size: tuple[int, int] = (6, 4)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def colors(record: Any) -> list[tuple[int, int, int]]:
    return [image.getpixel((0, 0)) for image in record.multimodal["images"]]


def test_every_image_format_decodes(tmp_path: Path) -> None:
    (tmp_path / "red.png").write_bytes(png("red"))
    b64 = base64.b64encode(png("lime")).decode()
    rows = [
        {"prompt": "a", "reference": "1", "images": "red.png"},  # relative path
        {"prompt": "b", "reference": "1", "images": str(tmp_path / "red.png")},  # absolute
        {"prompt": "c", "reference": "1", "images": f"data:image/png;base64,{b64}"},
        {"prompt": "d", "reference": "1", "images": b64},  # bare base64
        {"prompt": "e", "reference": "1", "images": ["red.png", f"data:image/png;base64,{b64}"]},
        {"prompt": "f", "reference": "1", "images": []},  # a text-only row in the same data
    ]
    data = HfPromptDataset(
        write_jsonl(tmp_path / "d.jsonl", rows), tiny_mm_tokenizer(), spec=VL, name="d"
    )
    red, lime = (255, 0, 0), (0, 255, 0)
    assert [colors(data[i]) for i in range(5)] == [[red], [red], [lime], [lime], [red, lime]]
    assert data[5].multimodal == {}
    # one image part per image, rendered by the chat template as the model's placeholders
    assert data[4].prompt_text.count("<|image_pad|>") == 2
    assert "<|image_pad|>" not in data[5].prompt_text


def test_bytes_pil_and_hf_image_feature(tmp_path: Path) -> None:
    rows = [
        {"prompt": "a", "reference": "1", "images": png("blue")},
        {"prompt": "b", "reference": "1", "images": Image.new("RGB", (3, 3), "red")},
        {"prompt": "c", "reference": "1", "images": {"bytes": png("lime"), "path": None}},
    ]
    memory = InMemoryPromptSource(rows, tiny_mm_tokenizer(), spec=VL)
    assert [colors(memory[i]) for i in range(3)] == [[(0, 0, 255)], [(255, 0, 0)], [(0, 255, 0)]]
    table = datasets.Dataset.from_dict(
        {"prompt": ["q"], "reference": ["1"], "images": [[Image.new("RGB", (5, 5), "blue")]]},
        features=datasets.Features(
            {
                "prompt": datasets.Value("string"),
                "reference": datasets.Value("string"),
                "images": datasets.Sequence(datasets.Image()),
            }
        ),
    )
    table.save_to_disk(str(tmp_path / "hf"))
    data = HfPromptDataset(tmp_path / "hf", tiny_mm_tokenizer(), spec=VL)
    assert colors(data[0]) == [(0, 0, 255)]


def test_markers_place_the_images() -> None:
    rows = [
        {"prompt": "left <image> right <image> end", "reference": "1", "images": [png("red")] * 2}
    ]
    text = InMemoryPromptSource(rows, tiny_mm_tokenizer(), spec=VL)[0].prompt_text
    pad = "<|vision_start|><|image_pad|><|vision_end|>"
    assert f"left {pad} right {pad} end" in text


def uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def bad_rows() -> list[dict[str, Any]]:
    return [
        {"prompt": "ok", "reference": "1", "images": uri(png("red"))},
        {"prompt": "gone", "reference": "1", "images": "missing.png"},
        {"prompt": "corrupt", "reference": "1", "images": uri(b"\x89PNG not really")},
        {"prompt": "two <image> <image>", "reference": "1", "images": [uri(png("red"))]},
        {"prompt": "ok too", "reference": "2", "images": [uri(png("blue"))]},
    ]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (1, r"d.jsonl row 1: image file .*missing.png does not exist .*'images'"),
        (2, r"d.jsonl row 2: the image data holds no readable image \(expected PNG.*'images'$"),
        (3, r"d.jsonl row 3: the prompt marks 2 images .* the row has 1 images .*'images'"),
    ],
)
def test_bad_images_name_file_row_and_key(tmp_path: Path, row: int, message: str) -> None:
    rows = bad_rows()
    path = write_jsonl(tmp_path / "d.jsonl", [rows[0]] * row + [rows[row]])  # good rows first
    with pytest.raises(BadRowError, match=message):
        HfPromptDataset(path, tiny_mm_tokenizer(), spec=VL)


def test_bad_rows_are_skipped_and_the_rest_kept() -> None:
    spec = RowSpec(images_key="images", on_bad_row="skip")
    data = InMemoryPromptSource(bad_rows(), tiny_mm_tokenizer(), spec=spec, name="m")
    assert data.stats.rows == 5 and data.stats.skipped_bad_rows == 3
    assert [data[i].uid for i in range(len(data))] == ["m:0", "m:4"]
    assert colors(data[1]) == [(0, 0, 255)]


def tone(seconds: float, rate: int) -> np.ndarray:
    return np.sin(np.arange(int(rate * seconds)) * 0.1).astype(np.float32)


def test_audio_formats_and_rate_check(tmp_path: Path) -> None:
    write_wav(tmp_path / "a.wav", tone(0.1, 16000), 16000)
    spec = RowSpec(audios_key="audio", audio_sampling_rate=16000, on_bad_row="skip")
    rows = [
        {
            "prompt": "x",
            "reference": "1",
            "audio": {"array": tone(0.2, 16000), "sampling_rate": 16000},
        },
        {
            "prompt": "y",
            "reference": "1",
            "audio": [(tone(0.1, 16000), 16000), str(tmp_path / "a.wav")],
        },
        {"prompt": "z", "reference": "1", "audio": (tone(0.1, 8000), 8000)},  # wrong rate
    ]
    data = InMemoryPromptSource(rows, tiny_mm_tokenizer(), spec=spec, name="au")
    assert len(data) == 2 and data.stats.skipped_bad_rows == 1  # row 2 dropped, others kept
    strict = RowSpec(audios_key="audio", audio_sampling_rate=16000)
    with pytest.raises(
        BadRowError, match=r"au row 2: audio clip is sampled at 8000 Hz, expected 16000"
    ):
        InMemoryPromptSource(rows, tiny_mm_tokenizer(), spec=strict, name="au")
    clip, rate = data[0].multimodal["audios"][0]
    assert rate == 16000 and clip.shape == (3200,)
    assert data[1].prompt_text.count("<|AUDIO|>") == 2


VL_CHECKED = RowSpec(images_key="images", placeholders=MediaPlaceholders(image="<|image_pad|>"))


def test_a_raw_image_placeholder_without_an_image_is_a_bad_row_when_built() -> None:
    rows = [
        {"prompt": "<image> which colour?", "reference": "red", "images": [uri(png("red"))]},
        {"prompt": "<|image_pad|> which colour?", "reference": "red", "images": []},
        {"prompt": "a text row", "reference": "1", "images": []},
    ]
    with pytest.raises(BadRowError) as caught:
        InMemoryPromptSource(rows, tiny_mm_tokenizer(), spec=VL_CHECKED, name="v")
    assert str(caught.value) == (
        "v row 1: the prompt holds 1 image placeholder token(s) '<|image_pad|>' but the row "
        "has 0 image(s) (key 'images'); expected one per image, placed by the data layer "
        "(mark positions with <image> / <audio>, not the model's token); in 'prompt'"
    )
    skipping = replace(VL_CHECKED, on_bad_row="skip")
    data = InMemoryPromptSource(rows, tiny_mm_tokenizer(), spec=skipping, name="v")
    assert data.stats.skipped_bad_rows == 1 and [data[i].uid for i in range(2)] == ["v:0", "v:2"]
    # a text-only data set for the same model: the raw token is as bad without a media key
    text_only = RowSpec(placeholders=VL_CHECKED.placeholders)
    with pytest.raises(BadRowError, match=r"v row 0: .* has 0 image\(s\) \(no media key\)"):
        InMemoryPromptSource(rows[1:2], tiny_mm_tokenizer(), spec=text_only, name="v")


def test_a_placeholder_cut_off_by_truncation_is_a_bad_row() -> None:
    rows = [{"prompt": "<image>" + " long text" * 20, "reference": "1", "images": [png("red")]}]
    fmt = PromptFormat(max_prompt_tokens=40)  # keeps the text's end: the image part is cut
    spec = replace(VL_CHECKED, on_bad_row="skip")
    with pytest.raises(ValueError, match="no usable prompts"):  # its only row was skipped
        InMemoryPromptSource(rows, tiny_mm_tokenizer(), spec=spec, name="t", prompt_format=fmt)
    cut = r"t row 0: the prompt was cut by \d+ tokens to max_prompt_length \(40, truncate=left\)"
    with pytest.raises(
        BadRowError, match=cut + r", cutting media placeholders: the prompt holds 0"
    ):
        InMemoryPromptSource(
            rows, tiny_mm_tokenizer(), spec=VL_CHECKED, prompt_format=fmt, name="t"
        )


def test_media_errors_name_the_file_and_what_was_expected(tmp_path: Path) -> None:
    (tmp_path / "bad.png").write_bytes(b"\x89PNG not really")
    write_wav(tmp_path / "empty.wav", tone(0.0, 16000), 16000)
    write_wav(tmp_path / "slow.wav", tone(0.1, 8000), 8000)
    cases = {
        "images": (
            "bad.png",
            f"image file {tmp_path / 'bad.png'} holds no readable image (expected PNG",
        ),
        "audio": ("empty.wav", f"audio file {tmp_path / 'empty.wav'} holds no samples"),
        "slow": (
            "slow.wav",
            f"audio file {tmp_path / 'slow.wav'} is sampled at 8000 Hz, expected 16000 Hz",
        ),
    }
    for case, (file, message) in cases.items():
        key = "images" if case == "images" else "audio"
        spec = RowSpec(
            images_key="images" if key == "images" else None,
            audios_key="audio" if key == "audio" else None,
            audio_sampling_rate=16000,
        )
        rows = [{"prompt": "p", "reference": "1", key: file}]
        path = write_jsonl(tmp_path / f"{case}.jsonl", rows)
        with pytest.raises(BadRowError) as caught:
            HfPromptDataset(path, tiny_mm_tokenizer(), spec=spec)
        text = str(caught.value)
        assert text.startswith(f"{path} row 0: {message}") and text.endswith(f"'{key}'"), text
        assert "BytesIO" not in text
