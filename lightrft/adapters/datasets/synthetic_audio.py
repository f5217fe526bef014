"""A built-in audio task that needs no download: which of two tones is higher.

Each row holds two sine tones (numpy): one low (200-320 Hz) and one high (700-1100 Hz), in
random order; the answer is ``"first"`` or ``"second"`` (the higher one). The two pitch
bands are far apart so that a tiny model can learn the task from scratch in minutes. Rows are
``{"prompt", "reference", "audios": [(waveform, rate), (waveform, rate)]}``, deterministic
in ``seed``.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from lightrft.adapters.datasets.in_memory import InMemoryPromptSource
from lightrft.adapters.datasets.prompt_rows import RowSpec
from lightrft.adapters.datasets.rendering import PromptFormat

QUESTION = "Which tone is higher, the first or the second?"


def sine(freq: float, seconds: float, rate: int) -> np.ndarray:
    """A sine tone of amplitude 0.5 with 10 ms fades (float32, (rate * seconds,))."""
    t = np.arange(int(rate * seconds)) / rate
    wave = 0.5 * np.sin(2 * np.pi * freq * t)
    fade = np.minimum(1.0, np.minimum(t, t[-1] - t) / 0.01)
    out: np.ndarray = (wave * fade).astype(np.float32)
    return out


def tone_problems(
    n: int, seed: int = 0, *, rate: int = 16_000, seconds: float = 0.4
) -> list[dict[str, Any]]:
    """``n`` rows of the task (see the module docstring), fixed by ``seed``."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = random.Random(f"tones-{seed}")
    rows = []
    for _ in range(n):
        low, high = rng.uniform(200.0, 320.0), rng.uniform(700.0, 1100.0)
        first_higher = rng.random() < 0.5
        pair = (high, low) if first_higher else (low, high)
        clips = [(sine(f, seconds, rate), rate) for f in pair]
        answer = "first" if first_higher else "second"
        rows.append({"prompt": QUESTION, "reference": answer, "audios": clips})
    return rows


def tone_prompts(
    n: int,
    seed: int = 0,
    *,
    tokenizer: Any,
    prompt_format: PromptFormat | None = None,
    rate: int = 16_000,
) -> InMemoryPromptSource:
    """The rows of :func:`tone_problems` as a prompt source; uids ``"tones-<seed>:<i>"``."""
    rows = tone_problems(n, seed, rate=rate)
    return clip_rows_source(rows, tokenizer, prompt_format, rate, name=f"tones-{seed}")


def clip_rows_source(
    rows: list[dict[str, Any]],
    tokenizer: Any,
    prompt_format: PromptFormat | None,
    rate: int,
    *,
    name: str,
) -> InMemoryPromptSource:
    """Rows holding their clips under ``"audios"`` (all at ``rate``) as a prompt source."""
    spec = RowSpec(audios_key="audios", audio_sampling_rate=rate)
    return InMemoryPromptSource(rows, tokenizer, spec=spec, prompt_format=prompt_format, name=name)
