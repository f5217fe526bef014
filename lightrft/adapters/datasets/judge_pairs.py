"""Preference pairs as pairwise judge prompts: the prompt a generative judge answers with a
verdict, and the verdict that agrees with the human preference (its reference).

A pair (:class:`~lightrft.domain.types.PreferencePair`, from preference rows or a named
reward data set, :mod:`~lightrft.adapters.datasets.reward_sets`) becomes one prompt row
``{"prompt", "reference"[, "images"][, "videos"]}``. Which side shows the chosen response is
drawn per pair from a seeded hash of its uid (about half each way, the same on every run),
so a judge cannot agree by always naming one side. ``reference`` is the label of the chosen
side (``A``: response 1, ``B``: response 2). Two forms:

- built-in (:func:`judge_pair_row`): the template (:data:`PAIR_TEMPLATE`) filled with the
  pair's prompt and its two responses as ``Response 1`` and ``Response 2``, verdict
  ``[[A]]`` / ``[[B]]`` (read by :class:`~lightrft.adapters.reward_models.verdict.LabelVerdict`);
- the original LightRFT's (:func:`original_judge_row`, with system prompts by task type,
  :mod:`~lightrft.adapters.datasets.task_prompts`): the system message is the prompt of the
  data set's task type with the generation prompt in place of ``{prompt}``; the user message
  shows the prompt's own image ("Reference Image:"), then "The following is the first
  video." (image) and its media, then the second; the verdict is
  ``<answer>Video 1 is better</answer>`` (``judge_agreement`` with ``verdict: answer``).

Media responses are shown as media: image responses (``hpdv3``, ``rapidata-t2i`` ...) in the
row's ``images``, video responses (``rapidata-i2v``, ``rapidata-t2v`` ...) in its ``videos``
(paths, sampled into frames by ``data.*.fps`` for Qwen2-VL / Qwen2.5-VL models), each at
its marker, the prompt's own images first. Audio responses are refused by name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from lightrft.adapters.datasets.data_specs import parse_data_specs
from lightrft.adapters.datasets.multimodal_rows import AUDIO_MARKER, IMAGE_MARKER, VIDEO_MARKER
from lightrft.adapters.datasets.rendering import Content, PromptFormat, PromptRenderer
from lightrft.adapters.datasets.reward_sets.media_pairs import SIDES
from lightrft.adapters.datasets.reward_sets.registry import DEFAULT_REWARD_DATASET, REWARD_DATASETS
from lightrft.adapters.datasets.reward_sets.reward_mix import load_reward_pairs
from lightrft.adapters.datasets.task_prompts import TaskPrompts
from lightrft.domain.types import PreferencePair

PAIR_TEMPLATE = (
    "Compare two responses to the prompt below.\n"
    "Prompt: {prompt}\n"
    "Response 1: {response1}\n"
    "Response 2: {response2}\n"
    "Reason inside <think></think>, then give your verdict: [[A]] if response 1 is better, "
    "[[B]] if response 2 is better."
)
"""The built-in judge prompt: ``{prompt}``, ``{response1}``, ``{response2}`` are filled."""

FIRST, SECOND = "A", "B"
"""The verdict labels of response 1 and response 2."""

JUDGED_RESPONSES = ("text", "images", "videos")
"""Response kinds a judge prompt shows."""

NOUNS = {"images": "image", "videos": "video", "text": "response"}
"""What the original's judge prompt calls a response, by kind."""


def chosen_first(uid: str, seed: int = 0) -> bool:
    """Whether the pair ``uid`` shows its chosen response as response 1 (seeded hash)."""
    digest = hashlib.sha256(f"judge-pairs:{seed}:{uid}".encode()).digest()
    return digest[0] % 2 == 0


def judge_pair_row(
    pair: PreferencePair, *, template: str = PAIR_TEMPLATE, seed: int = 0
) -> dict[str, Any]:
    """The judge prompt row of ``pair``: ``prompt``, ``reference`` (A or B) and, when the
    pair has images, ``images`` in marker order."""
    first = chosen_first(pair.uid, seed)
    sides = SIDES if first else tuple(reversed(SIDES))
    texts = {side: getattr(pair, side) for side in SIDES}
    prompt = template.format(
        prompt=pair.prompt, response1=texts[sides[0]], response2=texts[sides[1]]
    )
    row: dict[str, Any] = {"prompt": prompt, "reference": FIRST if first else SECOND}
    return row | _media(pair, sides)


def _media(pair: PreferencePair, sides: tuple[str, ...]) -> dict[str, list[Any]]:
    """The row's ``images`` (the prompt's, then each side's) and ``videos`` (each side's)."""
    media: dict[str, list[Any]] = {}
    for kind in ("images", "videos"):
        items = list(pair.multimodal.get(kind, ()))
        for side in sides:
            items.extend(pair.multimodal.get(side, {}).get(kind, ()))
        if items:
            media[kind] = items
    return media


def original_judge_row(
    pair: PreferencePair, system: TaskPrompts, task_type: str, *, seed: int = 0
) -> dict[str, Any]:
    """The judge prompt row of ``pair`` in the original LightRFT's form (module docstring)."""
    first = chosen_first(pair.uid, seed)
    sides = SIDES if first else tuple(reversed(SIDES))
    kind = next((k for k in ("videos", "images") if k in pair.multimodal.get(SIDES[0], {})), "text")
    prompt_images = len(pair.multimodal.get("images", ()))
    request = _MARKS.sub("", pair.prompt).strip()
    parts = [f"Reference Image:{IMAGE_MARKER}"] * prompt_images
    for ordinal, side in zip(("first", "second"), sides, strict=True):
        shown = getattr(pair, side) if kind == "text" else getattr(pair, side).strip()
        parts.append(f"The following is the {ordinal} {NOUNS[kind]}.{shown}")
    chat = [
        {"role": "system", "content": system.for_task(task_type, request)},
        {"role": "user", "content": "\n".join(parts)},
    ]
    row: dict[str, Any] = {"prompt": chat, "reference": FIRST if first else SECOND}
    return row | _media(pair, sides)


_MARKS = re.compile("|".join(re.escape(m) for m in (IMAGE_MARKER, VIDEO_MARKER, AUDIO_MARKER)))


class _MarkedText(PromptRenderer):
    """Plain text of a prompt, its media parts as their markers (the pair's prompt text)."""

    def text(self, content: Content) -> str:
        if isinstance(content, str):
            return content
        marks = {"image": IMAGE_MARKER, "video": VIDEO_MARKER, "audio": AUDIO_MARKER}
        texts = []
        for message in content:
            body = message.get("content", "")
            if isinstance(body, str):
                texts.append(body)
                continue
            texts.append(
                "".join(
                    str(part.get("text", ""))
                    if part.get("type") == "text"
                    else marks.get(str(part.get("type")), "")
                    for part in body
                )
            )
        return "\n\n".join(texts)


def refuse_unjudged_sets(text: str) -> None:
    """``ValueError`` naming a set of ``text`` whose responses a judge prompt cannot show."""
    for entry in parse_data_specs(text):
        name = entry.name or DEFAULT_REWARD_DATASET
        kind = REWARD_DATASETS.get(name).responses
        if kind not in JUDGED_RESPONSES:
            raise ValueError(
                f"{name} gives {kind} responses; a judge prompt shows text, images or videos"
            )


def load_judge_pairs(
    text: str,
    tokenizer: Any,
    *,
    template: str = PAIR_TEMPLATE,
    seed: int = 0,
    probabilities: Sequence[float] | None = None,
    task_prompts: TaskPrompts | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Judge prompt rows of the pairs of ``text`` (a path or ``name:path,...`` list, see
    :func:`~lightrft.adapters.datasets.reward_sets.reward_mix.load_reward_pairs`) and the
    number of skipped bad rows. The pairs' prompts are read as plain text (the judge's chat
    template is applied to the whole judge prompt later). With ``task_prompts`` the rows are
    in the original's form, each set's system prompt that of its task type."""
    refuse_unjudged_sets(text)
    plain = _MarkedText(tokenizer, PromptFormat(render="plain"))
    if task_prompts is None:
        pairs, skipped = load_reward_pairs(
            text, plain, probabilities=probabilities, seed=seed, responses=set(JUDGED_RESPONSES)
        )
        return [judge_pair_row(pair, template=template, seed=seed) for pair in pairs], skipped
    if probabilities is not None:
        raise ValueError("judge prompts by task type read each data set whole (no probabilities)")
    rows: list[dict[str, Any]] = []
    skipped = 0
    for entry in parse_data_specs(text):
        name = entry.name or DEFAULT_REWARD_DATASET
        task_type = task_prompts.task_type(name)
        pairs, bad = load_reward_pairs(
            f"{name}:{entry.path}", plain, seed=seed, responses=set(JUDGED_RESPONSES)
        )
        rows.extend(original_judge_row(p, task_prompts, task_type, seed=seed) for p in pairs)
        skipped += bad
    return rows, skipped
