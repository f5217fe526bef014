"""Preference pairs as pairwise judge prompts: the chosen side's label is the reference, both
sides occur, images and videos follow the markers, audio sets are refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightrft.adapters.datasets.judge_pairs import judge_pair_row, load_judge_pairs
from lightrft.adapters.datasets.judge_sft_rows import judge_sft_row
from lightrft.domain.types import PreferencePair
from tests.helpers.reward_set_files import (
    FLOAT,
    STRING,
    colour_of,
    colour_png,
    touch_video,
    write_json,
    write_parquet,
)
from tests.unit.adapters.datasets.tiny_tokenizers import byte_tokenizer


def _write_pairs(path: Path, n: int) -> Path:
    rows = [
        {"prompt": f"What is {i} + 1?", "chosen": f"The answer is {i + 1}.", "rejected": "No idea."}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_the_reference_names_the_side_that_shows_the_chosen_response(tmp_path: Path) -> None:
    rows, skipped = load_judge_pairs(str(_write_pairs(tmp_path / "p.jsonl", 20)), byte_tokenizer())
    assert skipped == 0 and len(rows) == 20
    for i, row in enumerate(rows):
        first = row["prompt"].split("Response 1: ", 1)[1].split("\n", 1)[0]
        second = row["prompt"].split("Response 2: ", 1)[1].split("\n", 1)[0]
        assert {first, second} == {f"The answer is {i + 1}.", "No idea."}
        assert row["reference"] == ("A" if first == f"The answer is {i + 1}." else "B")
        assert f"Prompt: What is {i} + 1?" in row["prompt"]  # the plain prompt, no template
    references = [row["reference"] for row in rows]
    assert 5 <= references.count("A") <= 15  # both sides, about half each
    again, _ = load_judge_pairs(str(tmp_path / "p.jsonl"), byte_tokenizer())
    assert again == rows  # the same sides on every run


def test_image_pairs_list_the_images_in_marker_order(tmp_path: Path) -> None:
    red, blue = (
        colour_png(tmp_path / "r.png", (255, 0, 0)),
        colour_png(tmp_path / "b.png", (0, 0, 255)),
    )
    data = write_json(
        tmp_path / "train.json",
        [{"prompt": f"a red cat {i}", "path1": str(red), "path2": str(blue)} for i in range(8)],
    )
    rows, _ = load_judge_pairs(f"hpdv3:{data}", byte_tokenizer())
    for row in rows:
        assert row["prompt"].count("<image>") == 2 and len(row["images"]) == 2
        first = colour_of(row["images"][0])
        assert row["reference"] == ("A" if first == (255, 0, 0) else "B")  # path1 is chosen
    sft = judge_sft_row(rows[0], "<think>x</think>[[A]]", tmp_path / "out", "pair0")
    user, assistant = sft["messages"]
    images = [part["image"] for part in user["content"] if part["type"] == "image"]
    assert [colour_of_file(tmp_path / "out" / name) for name in images] == [
        colour_of(image) for image in rows[0]["images"]
    ]
    assert assistant == {"role": "assistant", "content": "<think>x</think>[[A]]"}


def colour_of_file(path: Path) -> tuple[int, int, int]:
    from PIL import Image

    with Image.open(path) as image:
        return colour_of(image.convert("RGB"))


def test_video_pairs_show_both_videos_in_marker_order(tmp_path: Path) -> None:
    one = touch_video(tmp_path / "videos" / "a.mp4")
    two = touch_video(tmp_path / "videos" / "b.mp4")
    criteria = ("Preference", "Coherence", "Alignment")
    features = {"prompt": STRING, "file_name1": STRING, "file_name2": STRING,
                **{f"weighted_results{i}_{m}": FLOAT for i in (1, 2) for m in criteria}}  # fmt: skip
    rows = [
        {"prompt": f"clip {i}", "file_name1": "a.mp4", "file_name2": "b.mp4",
         **{f"weighted_results1_{m}": 0.6 for m in criteria},
         **{f"weighted_results2_{m}": 0.1 for m in criteria}}
        for i in range(8)
    ]  # fmt: skip
    write_parquet(tmp_path / "data" / "train.parquet", rows, features)
    judged, _ = load_judge_pairs(f"rapidata-t2v:{tmp_path / 'data'}", byte_tokenizer())
    assert {row["reference"] for row in judged} == {"A", "B"}
    for row in judged:
        assert row["prompt"].count("<video>") == 2 and "images" not in row
        chosen_first = row["reference"] == "A"
        want = [one, two] if chosen_first else [two, one]  # file 1 is chosen
        assert row["videos"] == [str(p.resolve()) for p in want]
    with pytest.raises(ValueError, match="audio-alpaca gives audios responses; a judge prompt"):
        load_judge_pairs(f"audio-alpaca:{tmp_path / 'data'}", byte_tokenizer())


def test_audio_sets_are_refused_by_name(tmp_path: Path) -> None:
    # video pairs are judged (test_judge_task_prompts.py)
    with pytest.raises(ValueError, match="omnirewardbench-t2a gives audios responses"):
        load_judge_pairs(f"omnirewardbench-t2a:{tmp_path}", byte_tokenizer())


def test_a_text_pair_becomes_a_prompt_completion_row(tmp_path: Path) -> None:
    pair = PreferencePair("u", "Q?", "good", "bad")
    row = judge_pair_row(pair)
    assert judge_sft_row(row, "[[A]]", tmp_path, "u") == {
        "prompt": row["prompt"],
        "completion": "[[A]]",
    }
