"""``data.*.preprocessor=judge_pairs`` through the wiring: a pairs file gives judge prompts
whose reference is the side showing the chosen response; a named set's folder reaches its
loader whole (not as a split); a video set gives prompts with both videos, an audio set is
refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightrft.entrypoints.config.sections import DatasetConfig
from lightrft.entrypoints.wiring.data import build_prompts
from tests.helpers.judge_scripts import write_judge_pairs
from tests.unit.adapters.datasets.tiny_tokenizers import byte_tokenizer


def test_pairs_become_judge_prompts_with_the_preferred_side_as_reference(tmp_path: Path) -> None:
    data = write_judge_pairs(tmp_path / "pairs.jsonl")
    source = build_prompts(
        DatasetConfig(path=str(data), preprocessor="judge_pairs"), byte_tokenizer()
    )
    assert source is not None and len(source) == 4
    for i in range(4):
        record = source[i]
        first = record.prompt_text.split("Response 1: ", 1)[1].split("\n", 1)[0]
        chosen = "Bad answer 3." if i == 3 else f"Good answer {i}."
        assert record.reference == ("A" if first == chosen else "B")


def test_an_audio_set_folder_is_refused_by_name(tmp_path: Path) -> None:
    # video pairs are judged (tests/unit/adapters/datasets/test_judge_task_prompts.py)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "shard.parquet").write_bytes(b"")
    config = DatasetConfig(
        path=f"omnirewardbench-t2a:{tmp_path / 'data'}", preprocessor="judge_pairs"
    )
    with pytest.raises(ValueError, match="omnirewardbench-t2a gives audios responses"):
        build_prompts(config, byte_tokenizer())


def test_a_video_set_folder_gives_prompts_with_both_videos_sampled(tmp_path: Path) -> None:
    from lightrft.adapters.hf.multimodal_inputs import MediaRequirements
    from tests.helpers.reward_set_files import FLOAT, STRING, write_parquet
    from tests.helpers.tiny_multimodal import tiny_mm_tokenizer
    from tests.helpers.tiny_video import plain_frames, write_video

    (tmp_path / "videos").mkdir()
    write_video(tmp_path / "videos" / "a.mp4", plain_frames([(250, 0, 0)] * 4, 32), fps=4)
    write_video(tmp_path / "videos" / "b.mp4", plain_frames([(0, 0, 250)] * 4, 32), fps=4)
    criteria = ("Preference", "Coherence", "Alignment")
    features = {"prompt": STRING, "file_name1": STRING, "file_name2": STRING,
                **{f"weighted_results{i}_{m}": FLOAT for i in (1, 2) for m in criteria}}  # fmt: skip
    row = {"prompt": "a wave", "file_name1": "a.mp4", "file_name2": "b.mp4",
           **{f"weighted_results1_{m}": 0.6 for m in criteria},
           **{f"weighted_results2_{m}": 0.1 for m in criteria}}  # fmt: skip
    write_parquet(tmp_path / "data" / "train.parquet", [row], features)
    config = DatasetConfig(
        path=f"rapidata-t2v:{tmp_path / 'data'}", preprocessor="judge_pairs", fps=2.0
    )
    media = MediaRequirements(image_placeholder="<|image_pad|>", video_placeholder="<|video_pad|>")
    source = build_prompts(config, tiny_mm_tokenizer(), media)
    assert source is not None and len(source) == 1
    record = source[0]
    assert record.prompt_text.count("<|video_pad|>") == 2
    first, second = record.multimodal["videos"]
    assert len(first.frames) == 2  # 4 frames at 4 fps sampled at 2 fps
    red_first = first.frames[0].getpixel((0, 0))[0] > 200
    assert red_first == (record.reference == "A")  # file 1 (red) is the chosen one
