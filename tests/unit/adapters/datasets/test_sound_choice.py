"""The ``sound_choice`` built-in: each clip is what its reference says (the spectrum's peak in
the hum / whistle band, or a flat spectrum for hiss), the prompt lists the three options in
R1-AQA's layout, the reference is one of them and the avqa_rule reward scores the tagged
answer; rows are fixed by the seed."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from lightrft.adapters.datasets import sound_choice_problems
from lightrft.adapters.datasets.synthetic_sound_choice import SOUNDS, multiple_choice_question
from lightrft.adapters.rewards.answer_tag_rule import ends_with_answer, tagged_answer

RATE = 16_000


def _heard(wave: np.ndarray) -> str:
    """What an independent listener calls the clip: the spectral flatness tells noise from a
    tone, the peak frequency a hum from a whistle."""
    power = np.abs(np.fft.rfft(wave)) ** 2 + 1e-12
    flatness = np.exp(np.mean(np.log(power))) / np.mean(power)
    if flatness > 0.1:
        return "hiss"
    peak = np.fft.rfftfreq(len(wave), 1 / RATE)[int(np.argmax(power))]
    assert 120 <= peak <= 250 or 1500 <= peak <= 2500, peak
    return "hum" if peak < 1000 else "whistle"


def test_every_clip_is_what_its_reference_says() -> None:
    rows = sound_choice_problems(60, seed=3)
    for row in rows:
        ((wave, rate),) = row["audios"]
        assert rate == RATE and wave.dtype == np.float32 and wave.shape == (RATE // 2,)
        assert float(np.abs(wave).max()) <= 1.0
        assert _heard(wave) == row["reference"]
    counts = Counter(row["reference"] for row in rows)
    assert set(counts) == set(SOUNDS) and min(counts.values()) >= 10


def test_the_prompt_lists_the_options_in_r1_aqas_layout() -> None:
    rows = sound_choice_problems(30, seed=1)
    orders = set()
    for row in rows:
        prompt = row["prompt"]
        assert prompt.startswith(
            "Which of the choices describes the clip? Choose one of these options: ["
        )
        assert prompt.endswith("Give the answer inside <answer></answer>.")
        listed = prompt.split("[", 1)[1].split("]", 1)[0]
        options = [o.strip().strip("'") for o in listed.split(",")]
        assert sorted(options) == sorted(SOUNDS) and row["reference"] in options
        orders.add(tuple(options))
    assert len(orders) > 1  # the order is drawn per row
    assert multiple_choice_question("Q?", ["a", "b"]) == (
        "Q? Choose one of these options: ['a', 'b']. Give the answer inside <answer></answer>."
    )


def test_the_tagged_answer_is_what_avqa_rule_reads() -> None:
    assert tagged_answer("<answer> hum </answer>") == "hum"
    assert ends_with_answer("<answer> hum </answer>")


def test_rows_are_fixed_by_the_seed_and_bad_sizes_are_named() -> None:
    a, b, c = (sound_choice_problems(8, seed=s) for s in (5, 5, 6))
    assert [r["prompt"] for r in a] == [r["prompt"] for r in b]
    assert all(
        np.array_equal(x["audios"][0][0], y["audios"][0][0]) for x, y in zip(a, b, strict=True)
    )
    assert [(r["prompt"], r["reference"]) for r in a] != [(r["prompt"], r["reference"]) for r in c]
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        sound_choice_problems(0)
