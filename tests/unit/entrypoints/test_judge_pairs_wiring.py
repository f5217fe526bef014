"""``data.*.preprocessor=judge_pairs`` through the wiring: a pairs file gives judge prompts
whose reference is the side showing the chosen response; a named set's folder reaches its
loader whole (not as a split), so a video set is refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightrft.entrypoints.config.sections import DatasetConfig
from lightrft.entrypoints.wiring.data import build_prompts
from tests.helpers.judge_scripts import write_judge_pairs
from tests.helpers.reward_set_files import touch_video
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


def test_a_video_set_folder_is_refused_by_name(tmp_path: Path) -> None:
    touch_video(tmp_path / "videos" / "a.mp4")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "shard.parquet").write_bytes(b"")
    config = DatasetConfig(path=f"rapidata-t2v:{tmp_path / 'data'}", preprocessor="judge_pairs")
    with pytest.raises(ValueError, match="rapidata-t2v gives video responses"):
        build_prompts(config, byte_tokenizer())
