"""``data.*.preprocessor=judge_pairs`` through the wiring: a pairs file gives judge prompts
whose reference is the side showing the chosen response; a named set's folder reaches its
loader whole (not as a split), so a video set is refused by name."""

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
