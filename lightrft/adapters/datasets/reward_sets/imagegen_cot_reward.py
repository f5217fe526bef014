"""ImageGen-CoT-Reward-5K (CodeGoat24): text-to-image judgements with chains of thought.

Published layout: a JSON file (one array) of rows with ``images`` (the two generated images,
paths relative to the file's folder) and ``conversations``, a list of ``{"from", "value"}``
turns: the first (``human``) asks which of the two images better fits a caption, the last
(``gpt``) reasons and ends with its verdict, ``Image 1 is better`` or ``Image 2 is better``
(inside ``<answer>`` tags). The pair's prompt is the first turn without its ``<image>``
markers; the verdict's image is chosen: the last verdict of the last ``<answer>`` block, or
of the whole turn when it has none.
"""

from __future__ import annotations

import re
from pathlib import Path

from lightrft.adapters.datasets.bad_rows import BadRowError
from lightrft.adapters.datasets.multimodal_rows import IMAGE_MARKER
from lightrft.adapters.datasets.prompt_rows import RowRef
from lightrft.adapters.datasets.rendering import PromptRenderer
from lightrft.adapters.datasets.reward_sets.media_pairs import media_item, media_pair
from lightrft.adapters.datasets.reward_sets.reward_set import (
    LoadedRewardSet,
    RewardSetOptions,
    collect,
)
from lightrft.adapters.datasets.reward_sets.table_files import table_refs
from lightrft.domain.types import PreferencePair

VERDICT = re.compile(r"image\s*([12])\s*is\s*better", re.IGNORECASE)
ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)


def _turns(ref: RowRef) -> list[str]:
    turns = ref.row.get("conversations")
    if turns is None:
        raise BadRowError(ref.where, "conversations", "missing key")
    ok = isinstance(turns, list) and len(turns) >= 2
    if not ok or not all(isinstance(t, dict) and isinstance(t.get("value"), str) for t in turns):
        problem = "expected at least two {from, value} turns in"
        raise BadRowError(ref.where, "conversations", problem)
    return [t["value"] for t in turns]


def cot_verdict(answer: str) -> int | None:
    """0 when ``answer`` ends by preferring image 1, 1 for image 2, None without a verdict."""
    tagged = ANSWER.findall(answer)
    found = VERDICT.findall(tagged[-1] if tagged else answer)
    return int(found[-1]) - 1 if found else None


def load_imagegen_cot_reward(
    path: Path, renderer: PromptRenderer, options: RewardSetOptions
) -> LoadedRewardSet:
    """The pairs of an ImageGen-CoT-Reward file (the answer's verdict picks the chosen)."""

    def pair(ref: RowRef) -> PreferencePair:
        turns = _turns(ref)
        images = ref.row.get("images")
        if not isinstance(images, list) or len(images) != 2:
            raise BadRowError(ref.where, "images", "expected a list of two image paths in")
        prompt = " ".join(turns[0].replace(IMAGE_MARKER, " ").split())
        if not prompt:
            raise BadRowError(ref.where, "conversations", "empty first turn in")
        better = cot_verdict(turns[-1])
        if better is None:
            problem = "the last turn has no verdict 'Image 1 is better' / 'Image 2 is better' in"
            raise BadRowError(ref.where, "conversations", problem)
        decoded = [media_item("images", image, ref, "images") for image in images]
        chosen, rejected = decoded[better], decoded[1 - better]
        return media_pair(ref.uid, prompt, {"images": [chosen]}, {"images": [rejected]}, renderer)

    refs, bad_lines = table_refs(path, (".json", ".jsonl"), options.on_bad_row)
    return collect(refs, pair, options.on_bad_row, bad_lines)
