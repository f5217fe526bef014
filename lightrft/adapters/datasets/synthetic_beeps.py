"""A built-in audio task that needs no download: how many beeps a clip holds.

Each row holds one clip of ``seconds`` with 1 to ``max_count`` beeps of one pitch (a sine of
300-900 Hz, drawn per clip) separated by silences of at least ``min_gap``; the answer is
their number (``"1"`` ..). How long the clip sounds in all is drawn from ``sound_seconds``
independently of the count and shared out at random among the beeps (each at least
``min_beep``), so the amount of sound (or energy) says nothing about the count: telling
counts apart needs the pauses between beeps. Rows are ``{"prompt", "reference", "audios":
[(waveform, rate)]}``, deterministic in ``seed``
(:func:`~lightrft.adapters.datasets.synthetic_audio.clip_rows_source` makes them prompts).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from lightrft.adapters.datasets.synthetic_audio import sine

QUESTION = "How many beeps are there?"
EDGE = 0.02
"""Seconds of silence kept at each end of a clip at least."""


def beep_problems(
    n: int,
    seed: int = 0,
    *,
    rate: int = 16_000,
    seconds: float = 0.96,
    max_count: int = 3,
    sound_seconds: tuple[float, float] = (0.18, 0.45),
    min_beep: float = 0.05,
    min_gap: float = 0.08,
) -> list[dict[str, Any]]:
    """``n`` rows of the task (see the module docstring), fixed by ``seed``."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not 1 <= max_count <= 9:
        raise ValueError(f"max_count must be in [1, 9], got {max_count}")
    if min_beep <= 0.02 or min_gap <= 0:
        raise ValueError(f"min_beep must be > 0.02 s and min_gap > 0 s, got {min_beep}, {min_gap}")
    low, high = sound_seconds
    if not max_count * min_beep <= low <= high:
        raise ValueError(
            f"sound_seconds must be (low, high) with max_count * min_beep "
            f"({max_count * min_beep:.3f} s) <= low <= high, got {sound_seconds}"
        )
    needed = high + (max_count - 1) * min_gap + 2 * EDGE
    if seconds < needed:
        raise ValueError(
            f"seconds={seconds} is too short for up to {high} s of sound in {max_count} beeps "
            f"with pauses of {min_gap} s (needs at least {needed:.3f} s)"
        )
    rng = random.Random(f"beeps-{seed}")
    rows = []
    for _ in range(n):
        count = rng.randint(1, max_count)
        sound = rng.uniform(low, high)
        shares = [rng.random() for _ in range(count)]
        extra = sound - count * min_beep
        lengths = [min_beep + extra * share / sum(shares) for share in shares]
        wave = _beeps(rng, lengths, rate, seconds, min_gap)
        rows.append({"prompt": QUESTION, "reference": str(count), "audios": [(wave, rate)]})
    return rows


def _beeps(
    rng: random.Random, lengths: list[float], rate: int, seconds: float, min_gap: float
) -> np.ndarray:
    """One clip (float32, (rate * seconds,)) of beeps of ``lengths`` seconds at random places."""
    pitch = rng.uniform(300.0, 900.0)
    slack = seconds - 2 * EDGE - sum(lengths) - (len(lengths) - 1) * min_gap
    weights = [rng.random() for _ in range(len(lengths) + 1)]  # slack shared by the pauses
    spare = [slack * w / sum(weights) for w in weights]
    wave = np.zeros(int(rate * seconds), dtype=np.float32)
    start = EDGE + spare[0]
    for i, length in enumerate(lengths):
        beep = sine(pitch, length, rate)
        at = int(start * rate)
        wave[at : at + len(beep)] = beep
        start += length + min_gap + spare[i + 1]
    return wave
