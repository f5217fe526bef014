"""Preference data for reward-model training: rows with a prompt, a chosen and a rejected
response, from jsonl / json / parquet files (or in-memory rows), into ``PreferencePair``s.

Accepted row shapes (keys configurable in :class:`PreferenceSpec`):

- ``{"prompt": str | messages, "chosen": str, "rejected": str}``;
- ``{"prompt": ..., "chosen": messages, "rejected": messages}`` where each response is a
  list of chat messages whose last one is the assistant's answer (only its content counts);
- ``{"chosen": messages, "rejected": messages}`` without a prompt key: full conversations
  that share every message but the last (the prompt), which must be the assistant's.

An optional ``margin`` key gives a non-negative per-pair margin. Cost-model rows (Safe RLHF)
name the more harmful response ``chosen`` and carry each response's safety label, booleans
under ``chosen_safe_key`` / ``rejected_safe_key`` (true: safe), read into signs -1 / +1. Prompts are rendered by the
same :class:`~lightrft.adapters.datasets.rendering.PromptRenderer` as RL prompts (chat
template with the generation prompt, system prompt), so a reward model is trained on text
laid out exactly as the policy's prompts will be at RL time. A pair whose two answers are
the same text teaches nothing and is a bad row like a malformed one: bad rows make one error
naming the file, row and key of each, or are skipped and counted (``on_bad_row="skip"``).

Pairs for vision- and audio-language reward models name their media columns
(``images_key`` / ``videos_key`` / ``audios_key``, values as in RL prompt rows:
:mod:`~lightrft.adapters.datasets.multimodal_rows`, videos sampled by ``frame_sampling``
(:mod:`~lightrft.adapters.datasets.video_frames`); paths relative to the data file). The
media belong to the prompt (both responses are judged with them): placed at ``<image>`` /
``<video>`` / ``<audio>`` markers of its last user message, else first, rendered as the
model's placeholders, and carried decoded in ``PreferencePair.multimodal``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lightrft.adapters.datasets.arithmetic import arithmetic_problems
from lightrft.adapters.datasets.bad_rows import BadRowError, BadRowPolicy, BadRows, with_bad_lines
from lightrft.adapters.datasets.hf_prompt_dataset import file_row_refs
from lightrft.adapters.datasets.multimodal_rows import media_content
from lightrft.adapters.datasets.prompt_rows import RowRef, RowSpec, multimodal_of
from lightrft.adapters.datasets.rendering import Content, PromptRenderer
from lightrft.adapters.datasets.video_frames import FrameSampling
from lightrft.domain.types import PreferencePair


@dataclass(frozen=True)
class PreferenceSpec:
    """Which keys hold the prompt, the two responses and the margin; bad-row policy."""

    prompt_key: str = "prompt"
    chosen_key: str = "chosen"
    rejected_key: str = "rejected"
    margin_key: str | None = None
    chosen_safe_key: str | None = None  # cost-model rows: is the chosen (more harmful) safe?
    rejected_safe_key: str | None = None
    on_bad_row: BadRowPolicy = "error"
    images_key: str | None = None  # the prompt's images (vision-language reward models)
    audios_key: str | None = None  # the prompt's audio clips (audio-language reward models)
    audio_sampling_rate: int | None = None  # every clip's rate (None: any)
    videos_key: str | None = None  # the prompt's videos (vision-language reward models)
    frame_sampling: FrameSampling = field(default_factory=FrameSampling)  # videos' frames
    head_labels_key: str | None = None  # per-aspect verdicts {head: A|B|C} (named-head RMs)


def _is_chat(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, Mapping) and "role" in m and "content" in m for m in value)
    )


def _response(value: Any, where: str, key: str) -> tuple[list[Mapping[str, Any]], str]:
    """(messages before the answer, answer text) of a response value."""
    if isinstance(value, str):
        if not value.strip():
            raise BadRowError(where, key, "empty response in")
        return [], value
    if not _is_chat(value):
        raise BadRowError(where, key, "expected a string or chat messages in")
    last = value[-1]
    if last.get("role") != "assistant" or not isinstance(last.get("content"), str):
        raise BadRowError(where, key, "the last message must be the assistant's text answer in")
    return list(value[:-1]), str(last["content"])


def read_preference(ref: RowRef, spec: PreferenceSpec) -> tuple[Content, str, str, float]:
    """(prompt content, chosen text, rejected text, margin) of a row; :class:`BadRowError`."""
    row = ref.row
    for key in (spec.chosen_key, spec.rejected_key):
        if row.get(key) is None:
            raise BadRowError(ref.where, key, "missing key")
    chosen_before, chosen = _response(row[spec.chosen_key], ref.where, spec.chosen_key)
    rejected_before, rejected = _response(row[spec.rejected_key], ref.where, spec.rejected_key)
    if rejected == chosen:
        problem = "the same answer as the chosen one (no preference to learn) in"
        raise BadRowError(ref.where, spec.rejected_key, problem)
    prompt = row.get(spec.prompt_key)
    if prompt is None:
        if not chosen_before:
            raise BadRowError(ref.where, spec.prompt_key, "missing key (and no conversation)")
        if chosen_before != rejected_before:
            raise BadRowError(ref.where, spec.rejected_key, "conversation differs from chosen's")
        prompt = chosen_before
    elif not (isinstance(prompt, str) and prompt.strip()) and not _is_chat(prompt):
        raise BadRowError(ref.where, spec.prompt_key, "expected a non-empty string or chat in")
    margin = 0.0
    if spec.margin_key is not None:
        value = row.get(spec.margin_key)
        if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise BadRowError(ref.where, spec.margin_key, "expected a number >= 0 in")
        margin = float(value)
    return prompt, chosen, rejected, margin


def read_safety_signs(ref: RowRef, spec: PreferenceSpec) -> tuple[int, int]:
    """(chosen sign, rejected sign) of a cost-model row: +1 unsafe, -1 safe, 0 without key."""
    signs = []
    for key in (spec.chosen_safe_key, spec.rejected_safe_key):
        if key is None:
            signs.append(0)
            continue
        value = ref.row.get(key)
        if not isinstance(value, bool):
            raise BadRowError(ref.where, key, "expected true (safe) or false (unsafe) in")
        signs.append(-1 if value else 1)
    return signs[0], signs[1]


HEAD_LETTERS = {"A": "chosen", "B": "rejected", "C": "tie"}
"""The original LightRFT's per-head labels (A: the first response, here ``chosen``, is
better; B: the second; C: a tie), besides the words themselves."""


def read_head_labels(ref: RowRef, spec: PreferenceSpec) -> dict[str, str]:
    """The row's per-head verdicts (``head_labels_key``: a mapping head -> A / B / C or
    chosen / rejected / tie); ``{}`` without the key or when the row has none."""
    key = spec.head_labels_key
    value = None if key is None else ref.row.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise BadRowError(ref.where, str(key), "expected a mapping head -> A/B/C in")
    labels = {}
    for head, label in value.items():
        verdict = HEAD_LETTERS.get(str(label), str(label))
        if verdict not in HEAD_LETTERS.values():
            raise BadRowError(
                ref.where,
                str(key),
                f"head {head!r}: expected A, B, C (or chosen, rejected, tie) in",
            )
        labels[str(head)] = verdict
    return labels


def preference_pairs(
    rows: Iterable[RowRef], renderer: PromptRenderer, spec: PreferenceSpec
) -> tuple[list[PreferencePair], int]:
    """The pairs of ``rows`` with rendered prompts, and the number of skipped bad rows."""
    pairs: list[PreferencePair] = []
    bad = BadRows(spec.on_bad_row)
    media_spec = RowSpec(
        images_key=spec.images_key,
        audios_key=spec.audios_key,
        audio_sampling_rate=spec.audio_sampling_rate,
        videos_key=spec.videos_key,
        frame_sampling=spec.frame_sampling,
    )
    for ref in rows:
        try:
            prompt, chosen, rejected, margin = read_preference(ref, spec)
            signs = read_safety_signs(ref, spec)
            head_labels = read_head_labels(ref, spec)
            media = multimodal_of(ref, media_spec)
            if media:
                images, audios = len(media.get("images", ())), len(media.get("audios", ()))
                videos = len(media.get("videos", ()))
                key = str(
                    spec.images_key if images else spec.videos_key if videos else spec.audios_key
                )
                prompt = media_content(prompt, images, audios, ref.where, key, videos=videos)
        except BadRowError as error:
            bad.add(error)
            continue
        text = renderer.text(prompt)
        pairs.append(
            PreferencePair(ref.uid, text, chosen, rejected, margin, *signs, media, head_labels)
        )
    return pairs, bad.check()


def load_preferences(
    path: str | Path, renderer: PromptRenderer, spec: PreferenceSpec | None = None
) -> tuple[list[PreferencePair], int]:
    """Pairs from a jsonl / json / parquet file (or ``save_to_disk`` directory)."""
    spec = spec or PreferenceSpec()
    deferred: list[BadRowError] = []  # named with the bad rows, in one error
    refs, bad_lines = file_row_refs(path, spec.on_bad_row, bad_lines=deferred)
    pairs, skipped = with_bad_lines(deferred, lambda: preference_pairs(refs, renderer, spec))
    return pairs, skipped + bad_lines


def in_memory_preferences(
    rows: Sequence[Mapping[str, Any]],
    renderer: PromptRenderer,
    spec: PreferenceSpec | None = None,
    *,
    name: str = "rows",
) -> tuple[list[PreferencePair], int]:
    """Pairs from in-memory rows (uids ``"<name>:<i>"``)."""
    refs = (RowRef(f"{name}:{i}", f"{name} row {i}", row) for i, row in enumerate(rows))
    return preference_pairs(refs, renderer, spec or PreferenceSpec())


SYNTHETIC_KINDS = ("bare", "ramble", "refuse", "wrong", "placeholder", "preamble")


def synthetic_preference_rows(
    n: int,
    seed: int = 0,
    *,
    kinds: Sequence[str] = SYNTHETIC_KINDS,
    instruction: str = "",
) -> list[dict[str, str]]:
    """``n`` rows ``{"prompt", "chosen", "rejected"}`` on the built-in arithmetic problems.

    The chosen answer states the correct number in a fixed format, ``"The answer is N."``;
    the rejected one is, by kind: ``bare`` (just the number), ``ramble`` (long and unsure),
    ``refuse`` (no answer), ``wrong`` (the fixed format with a wrong number), ``placeholder``
    (the format with a letter or word where the number goes, as a policy that copies an
    instruction's "The answer is N." writes it), ``preamble`` (the right sentence after a
    filler one, e.g. "You are correct. The answer is 7.").
    """
    unknown = sorted(set(kinds) - set(SYNTHETIC_KINDS))
    if unknown or not kinds:
        raise ValueError(f"unknown synthetic kinds {unknown}; valid: {list(SYNTHETIC_KINDS)}")
    rng = random.Random(f"preferences-{seed}")
    rows = []
    for problem in arithmetic_problems(n, seed=seed, difficulty=1):
        answer = int(problem["reference"])
        kind = rng.choice(list(kinds))
        rejected = {
            "bare": f"{answer}",
            "ramble": f"Hmm, let me think. It could be {answer}, or maybe {answer + 1}, "
            "I am really not sure about this one.",
            "refuse": rng.choice(["I don't know.", "Figure it out yourself.", "No idea."]),
            "wrong": f"The answer is {answer + rng.choice([-2, -1, 1, 2, 3])}.",
            "placeholder": f"The answer is {rng.choice(['N', 'X', 'n', 'the number'])}.",
            "preamble": rng.choice(["You are correct. ", "Sure! ", "Great question. "])
            + f"The answer is {answer}.",
        }[kind]
        prompt = f"{problem['prompt']} {instruction}".strip()
        rows.append({"prompt": prompt, "chosen": f"The answer is {answer}.", "rejected": rejected})
    return rows
