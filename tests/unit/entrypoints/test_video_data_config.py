"""data.*.videos_key / fps / max_frames / max_videos reach the rows: a jsonl of frame
folders read through build_prompts with the vision-language encoder's requirements."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightrft.adapters.datasets import BadRowError
from lightrft.adapters.hf.vision_language import VisionVideoEncoder
from lightrft.entrypoints.config.sections import DatasetConfig
from lightrft.entrypoints.wiring.data import build_prompts
from tests.helpers.tiny_multimodal import tiny_image_processor, tiny_mm_tokenizer
from tests.helpers.tiny_video import colour_frames


def _rows(tmp_path: Path, rows: list[dict]) -> Path:
    folder = tmp_path / "clip"
    folder.mkdir(exist_ok=True)
    for i, frame in enumerate(colour_frames(12, 56, 56)):
        frame.save(folder / f"{i:02d}.png")
    path = tmp_path / "v.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_fps_and_max_frames_sample_the_rows_videos(tmp_path: Path) -> None:
    tok = tiny_mm_tokenizer()
    media = VisionVideoEncoder(tok, tiny_image_processor()).requirements
    assert media.video_placeholder == "<|video_pad|>"
    rows = [{"prompt": "q", "reference": "a", "v": {"path": "clip", "fps": 6}}]
    path = _rows(tmp_path, rows)
    # 12 frames at 6 fps = 2 s; fps 2 -> 4 frames; max_frames 3 -> 3
    for fps, cap, want in ((2.0, 16, 4), (2.0, 3, 3), (None, 16, 12)):
        config = DatasetConfig(path=str(path), videos_key="v", fps=fps, max_frames=cap)
        source = build_prompts(config, tok, media)
        assert len(source[0].multimodal["videos"][0].frames) == want


def test_max_videos_makes_a_row_with_more_a_bad_row(tmp_path: Path) -> None:
    tok = tiny_mm_tokenizer()
    media = VisionVideoEncoder(tok, tiny_image_processor()).requirements
    path = _rows(tmp_path, [{"prompt": "q", "reference": "a", "v": ["clip", "clip"]}])
    config = DatasetConfig(path=str(path), videos_key="v", max_videos=1)
    with pytest.raises(BadRowError, match=r"v.jsonl row 0: 2 videos, more than max_videos \(1\)"):
        build_prompts(config, tok, media)
    assert len(build_prompts(config.model_copy(update={"max_videos": 2}), tok, media)) == 1
