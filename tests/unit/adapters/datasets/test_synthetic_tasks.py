"""Built-in visual and audio tasks: answers checked independently from the pixels / samples,
and the 'choice' rule reward."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lightrft.adapters.datasets import tone_problems, visual_problems, visual_prompts
from lightrft.adapters.datasets.synthetic_visual import COLOURS
from lightrft.adapters.rewards import ChoiceAnswerReward
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from tests.helpers.tiny_multimodal import tiny_mm_tokenizer


def test_colour_answers_match_the_pixels() -> None:
    rows = visual_problems(20, seed=1, task="colour")
    again = visual_problems(20, seed=1, task="colour")  # deterministic in the seed
    assert [r["reference"] for r in again] == [r["reference"] for r in rows]
    for row in rows:
        pixels = np.asarray(row["images"][0]).reshape(-1, 3)
        present = {name for name, rgb in COLOURS.items() if (pixels == rgb).all(-1).any()}
        assert present == {row["reference"]}
    assert {row["reference"] for row in rows} == {"red", "blue"}


def test_count_answers_match_the_occupied_cells() -> None:
    for row in visual_problems(20, seed=2, task="count", size=60):
        pixels = np.asarray(row["images"][0])
        occupied = sum(
            bool((pixels[y : y + 20, x : x + 20] != 250).any())
            for y in range(0, 60, 20)
            for x in range(0, 60, 20)
        )
        assert str(occupied) == row["reference"]


def test_tone_answers_name_the_higher_pitch() -> None:
    rows = tone_problems(12, seed=3)
    for row in rows:
        peaks = []
        for wave, rate in row["audios"]:
            spectrum = np.abs(np.fft.rfft(wave))
            peaks.append(np.argmax(spectrum) * rate / len(wave))  # dominant frequency, Hz
        assert row["reference"] == ("first" if peaks[0] > peaks[1] else "second")
    assert {row["reference"] for row in rows} == {"first", "second"}


def test_visual_prompts_carry_one_image_each() -> None:
    source = visual_prompts(3, seed=0, tokenizer=tiny_mm_tokenizer())
    assert len(source) == 3
    assert all(len(source[i].multimodal["images"]) == 1 for i in range(3))
    assert source[0].prompt_text.count("<|image_pad|>") == 1


@pytest.mark.parametrize(
    ("text", "reference", "score"),
    [("Red.", "red", 1.0), ("  blue is it", "blue", 1.0), ("red", "blue", 0.0), ("", "red", 0.0)],
)
def test_choice_reward(text: str, reference: str, score: float) -> None:
    prompt = PromptRecord("u", "q", (1,), reference=reference)
    result = ChoiceAnswerReward().score([RewardSample(prompt, Completion(0, (2,), text, "stop"))])
    assert result.scores.tolist() == [score]
    assert torch.equal(result.metrics["accuracy"], torch.tensor(score))
