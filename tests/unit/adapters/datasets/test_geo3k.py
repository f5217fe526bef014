"""Geo3K rows (hiyouga/geometry3k: ``images``, ``problem`` with ``<image>``, ``answer``): the
prompt asks for a boxed answer, the diagram sits at its marker, bad rows are named."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from lightrft.adapters.datasets import BadRowError, geo3k_prompts
from lightrft.adapters.datasets.math_rows import BOXED_INSTRUCTION
from lightrft.adapters.datasets.placeholders import MediaPlaceholders
from tests.helpers.hf_media_files import write_geo3k_parquet
from tests.helpers.tiny_multimodal import tiny_mm_tokenizer

IMAGE_PAD = MediaPlaceholders(image="<|image_pad|>")
PAD = "<|vision_start|><|image_pad|><|vision_end|>"


def diagram(colour: str) -> Image.Image:
    return Image.new("RGB", (40, 30), colour)


def test_rows_become_boxed_answer_prompts_with_their_diagrams(tmp_path: Path) -> None:
    path = write_geo3k_parquet(
        tmp_path / "test.parquet",
        [
            ("<image>Find x.", [diagram("red")], "3"),
            ("Find the area of the figure. <image>", [diagram("blue")], " 2\\sqrt{3} "),
            ("Two views: <image> <image> Find y.", [diagram("red"), diagram("lime")], "60"),
        ],
    )
    data = geo3k_prompts(path, tiny_mm_tokenizer(), placeholders=IMAGE_PAD)
    assert [data[i].uid for i in range(3)] == ["test:0", "test:1", "test:2"]
    assert [data[i].reference for i in range(3)] == ["3", "2\\sqrt{3}", "60"]
    assert f"{PAD}Find x.\n{BOXED_INSTRUCTION}" in data[0].prompt_text
    assert f"figure. {PAD}\n{BOXED_INSTRUCTION}" in data[1].prompt_text
    assert data[2].prompt_text.count(PAD) == 2
    pixels = [image.getpixel((0, 0)) for image in data[2].multimodal["images"]]
    assert pixels == [(255, 0, 0), (0, 255, 0)]


def test_bad_geo3k_rows_name_the_row_and_the_key(tmp_path: Path) -> None:
    path = write_geo3k_parquet(
        tmp_path / "bad.parquet",
        [
            ("<image>Find x.", [diagram("red")], "3"),
            ("   ", [diagram("red")], "3"),  # no problem text
            ("<image>Find y.", [diagram("red")], ""),  # no answer
            ("<image> and <image>: find z.", [diagram("red")], "4"),  # 2 markers, 1 diagram
        ],
    )
    with pytest.raises(BadRowError) as caught:
        geo3k_prompts(path, tiny_mm_tokenizer(), placeholders=IMAGE_PAD)
    message = str(caught.value)
    assert f"{path} row 1: missing key 'problem'" in message
    assert f"{path} row 2: missing key 'answer'" in message
    assert f"{path} row 3: the prompt marks 2 images and 0 audio clips but the row has 1" in message
    kept = geo3k_prompts(path, tiny_mm_tokenizer(), placeholders=IMAGE_PAD, on_bad_row="skip")
    assert len(kept) == 1 and kept.stats.skipped_bad_rows == 3
