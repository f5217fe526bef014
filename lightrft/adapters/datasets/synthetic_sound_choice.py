"""A built-in audio multiple-choice task in the AVQA / R1-AQA layout: which of the choices
describes the clip.

Each row holds one clip of ``seconds`` of one of three sounds: a ``hum`` (a sine of 120-250
Hz), a ``whistle`` (a sine of 1500-2500 Hz) or a ``hiss`` (white noise), at an amplitude drawn
from 0.2-0.5. The prompt asks as R1-AQA's rows do (:func:`multiple_choice_question`): the
question, the options in an order drawn per row, and the answer format (inside
``<answer></answer>``); the reference is the option's text, scored with the ``avqa_rule``
reward (accuracy + format). Rows are ``{"prompt", "reference", "audios": [(waveform,
rate)]}``, deterministic in ``seed``
(:func:`~lightrft.adapters.datasets.synthetic_audio.clip_rows_source` makes them prompts).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from lightrft.adapters.datasets.synthetic_audio import sine

QUESTION = "Which of the choices describes the clip?"
SOUNDS = ("hum", "whistle", "hiss")


def multiple_choice_question(question: str, choices: Sequence[str]) -> str:
    """R1-AQA's user text: the question, its options, the answer format."""
    options = "[" + ", ".join(repr(str(c)) for c in choices) + "]"
    return (
        f"{question} Choose one of these options: {options}. "
        "Give the answer inside <answer></answer>."
    )


def _clip(sound: str, rng: random.Random, seconds: float, rate: int) -> np.ndarray:
    amplitude = rng.uniform(0.2, 0.5)
    if sound == "hiss":
        noise = np.random.default_rng(rng.getrandbits(32)).standard_normal(int(rate * seconds))
        wave: np.ndarray = (amplitude * 0.5 * noise).clip(-1, 1).astype(np.float32)
        return wave
    band = (120.0, 250.0) if sound == "hum" else (1500.0, 2500.0)
    return (2 * amplitude * sine(rng.uniform(*band), seconds, rate)).astype(np.float32)


def sound_choice_problems(
    n: int, seed: int = 0, *, rate: int = 16_000, seconds: float = 0.5
) -> list[dict[str, Any]]:
    """``n`` rows of the task (see the module docstring), fixed by ``seed``."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = random.Random(f"sound_choice-{seed}")
    rows = []
    for _ in range(n):
        sound = rng.choice(SOUNDS)
        choices = list(SOUNDS)
        rng.shuffle(choices)
        rows.append(
            {
                "prompt": multiple_choice_question(QUESTION, choices),
                "reference": sound,
                "audios": [(_clip(sound, rng, seconds, rate), rate)],
            }
        )
    return rows
