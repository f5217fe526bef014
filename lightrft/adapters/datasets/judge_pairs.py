"""Preference pairs as pairwise judge prompts: the prompt a generative judge answers with a
verdict, and the verdict that agrees with the human preference (its reference).

A pair (:class:`~lightrft.domain.types.PreferencePair`, from preference rows or a named
reward data set, :mod:`~lightrft.adapters.datasets.reward_sets`) becomes one prompt row
``{"prompt", "reference"[, "images"]}``: the template (:data:`PAIR_TEMPLATE`) filled with the
pair's prompt and its two responses as ``Response 1`` and ``Response 2``. Which side shows
the chosen response is drawn per pair from a seeded hash of its uid (about half each way,
the same on every run), so a judge cannot agree by always naming one side. ``reference`` is
the label of the chosen side (``A``: response 1, ``B``: response 2), the verdict
``[[A]]`` / ``[[B]]`` a :class:`~lightrft.adapters.reward_models.verdict.LabelVerdict` reads.

Image responses (text-to-image sets: ``hpdv3``, ``imagerewarddb``, ``rapidata-t2i`` ...)
are shown as images: each response's ``<image>`` markers stay in the text and the row's
``images`` list holds the prompt's own images, then response 1's, then response 2's, in
marker order, so the prompt reader places one image part per marker. Video responses
(``rapidata-t2v``, ``rapidata-i2v``, ``omnirewardbench-t2v``) likewise: ``<video>`` markers
and a ``videos`` list of the two files (decoded and sampled by the prompt reader, at the
data set's ``fps`` / ``max_frames``). Audio responses are refused by name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from lightrft.adapters.datasets.data_specs import parse_data_specs
from lightrft.adapters.datasets.rendering import PromptFormat, PromptRenderer
from lightrft.adapters.datasets.reward_sets.media_pairs import SIDES
from lightrft.adapters.datasets.reward_sets.registry import DEFAULT_REWARD_DATASET, REWARD_DATASETS
from lightrft.adapters.datasets.reward_sets.reward_mix import load_reward_pairs
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
    for kind in ("images", "videos"):
        items = list(pair.multimodal.get(kind, ()))
        for side in sides:
            items.extend(pair.multimodal.get(side, {}).get(kind, ()))
        if items:
            row[kind] = items
    return row


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
) -> tuple[list[dict[str, Any]], int]:
    """Judge prompt rows of the pairs of ``text`` (a path or ``name:path,...`` list, see
    :func:`~lightrft.adapters.datasets.reward_sets.reward_mix.load_reward_pairs`) and the
    number of skipped bad rows. The pairs' prompts are read as plain text (the judge's chat
    template is applied to the whole judge prompt later)."""
    refuse_unjudged_sets(text)
    plain = PromptRenderer(tokenizer, PromptFormat(render="plain"))
    pairs, skipped = load_reward_pairs(
        text, plain, probabilities=probabilities, seed=seed, responses=set(JUDGED_RESPONSES)
    )
    return [judge_pair_row(pair, template=template, seed=seed) for pair in pairs], skipped
