"""The built-in `visual_compare` (two images: which has more shapes) and `beeps` (how many
beeps in a clip) tasks: deterministic in the seed, answers recomputed from the pixels /
samples, bad settings named, and both reachable through `data.train.builtin`."""

from __future__ import annotations

from typing import get_args

import numpy as np
import pytest

from lightrft.adapters.datasets import beep_problems, visual_problems
from lightrft.adapters.datasets.synthetic_visual import BACKGROUND
from lightrft.entrypoints.config.sections import DatasetConfig
from lightrft.entrypoints.wiring.data import BUILTIN_TASKS, build_prompts
from tests.helpers.tiny_multimodal import tiny_mm_tokenizer


def _shapes_in(image: object, size: int) -> int:
    """Grid cells (3 x 3) holding any pixel other than the background."""
    pixels = np.asarray(image)
    third = size // 3
    return sum(
        bool((pixels[y : y + third, x : x + third] != BACKGROUND).any())
        for y in range(0, 3 * third, third)
        for x in range(0, 3 * third, third)
    )


def _beeps_in(wave: np.ndarray, rate: int) -> int:
    """Separate stretches of sound: 5 ms windows whose peak exceeds 0.05, counted by onsets."""
    window = rate // 200
    peaks = np.abs(wave[: len(wave) // window * window]).reshape(-1, window).max(1)
    loud = peaks > 0.05
    return int(loud[0]) + int((loud[1:] & ~loud[:-1]).sum())


def test_compare_answers_name_the_image_with_more_shapes() -> None:
    rows = visual_problems(40, seed=4, task="compare")
    again = visual_problems(40, seed=4, task="compare")
    assert [r["reference"] for r in again] == [r["reference"] for r in rows]
    assert all(
        np.array_equal(np.asarray(a), np.asarray(b))
        for r, s in zip(rows, again, strict=True)
        for a, b in zip(r["images"], s["images"], strict=True)
    )
    for row in rows:
        assert [image.size for image in row["images"]] == [(84, 84), (84, 84)]
        first, second = (_shapes_in(image, 84) for image in row["images"])
        assert first != second and 1 <= min(first, second) and max(first, second) <= 3
        assert row["reference"] == ("first" if first > second else "second")
    assert {row["reference"] for row in rows} == {"first", "second"}
    other = visual_problems(40, seed=5, task="compare")
    assert [r["reference"] for r in other] != [r["reference"] for r in rows]


def test_compare_counts_reach_max_count() -> None:
    counts = {
        _shapes_in(image, 84)
        for row in visual_problems(60, seed=0, task="compare", max_count=5)
        for image in row["images"]
    }
    assert counts == {1, 2, 3, 4, 5}


def test_count_rows_are_unchanged_by_the_compare_task() -> None:
    """`visual_count` draws what it drew before `compare` existed: answers and pixel sums of
    seed 0's first rows as the previous generator made them."""
    rows = visual_problems(3, seed=0, task="count")
    assert [r["reference"] for r in rows] == ["2", "2", "1"]
    sums = [int(np.asarray(r["images"][0], dtype=np.int64).sum()) for r in rows]
    assert sums == [2140050, 2272070, 2262000]


def test_beep_answers_match_the_counted_onsets() -> None:
    rows = beep_problems(40, seed=6)
    again = beep_problems(40, seed=6)
    for row, same in zip(rows, again, strict=True):
        assert np.array_equal(row["audios"][0][0], same["audios"][0][0])
        wave, rate = row["audios"][0]
        assert rate == 16_000 and len(wave) == int(0.96 * rate)
        assert row["reference"] == str(_beeps_in(wave, rate))
    assert {row["reference"] for row in rows} == {"1", "2", "3"}


def test_how_long_a_clip_sounds_does_not_give_its_count() -> None:
    """The sound is shared among the beeps: its total length has the same spread for every
    count (the task needs the pauses, not the amount of sound)."""
    sounding: dict[str, list[float]] = {"1": [], "2": [], "3": []}
    for row in beep_problems(300, seed=0):
        wave, rate = row["audios"][0]
        sounding[row["reference"]].append(float((np.abs(wave) > 0).sum()) / rate)
    means = [float(np.mean(times)) for times in sounding.values()]
    assert max(means) - min(means) < 0.04  # each about (0.18 + 0.45) / 2
    assert max(sounding["1"]) > min(sounding["3"]) + 0.15


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: visual_problems(2, task="compare", max_count=1), "max_count"),
        (lambda: visual_problems(2, task="compare", max_count=10), "max_count"),
        (lambda: visual_problems(2, task="sizes"), "task"),  # type: ignore[arg-type]
        (lambda: visual_problems(2, task="compare", size=4), "size"),
        (lambda: beep_problems(0), "n must"),
        (lambda: beep_problems(2, max_count=0), "max_count"),
        (lambda: beep_problems(2, seconds=0.5), "seconds=0.5"),
        (lambda: beep_problems(2, sound_seconds=(0.1, 0.4)), "sound_seconds"),
        (lambda: beep_problems(2, sound_seconds=(0.4, 0.3)), "sound_seconds"),
        (lambda: beep_problems(2, min_gap=0.0), "min_gap"),
    ],
)
def test_bad_settings_name_the_field(make: object, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        make()  # type: ignore[operator]


@pytest.mark.parametrize(
    ("builtin", "key", "items"), [("visual_compare", "images", 2), ("beeps", "audios", 1)]
)
def test_builtin_names_build_the_tasks(builtin: str, key: str, items: int) -> None:
    source = build_prompts(DatasetConfig(builtin=builtin, num_builtin=4), tiny_mm_tokenizer())
    assert source is not None and len(source) == 4
    record = source[0]
    assert len(record.multimodal[key]) == items
    placeholder = "<|image_pad|>" if key == "images" else "<|AUDIO|>"
    assert record.prompt_text.count(placeholder) == items


def test_builtin_choices_are_the_registered_tasks() -> None:
    choices = get_args(DatasetConfig.model_fields["builtin"].annotation)
    assert set(choices) == set(BUILTIN_TASKS.names())
