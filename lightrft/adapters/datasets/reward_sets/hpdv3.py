"""HPDv3 (MizzenAI/HPDv3): text-to-image human preferences.

Published layout: a JSON file (one array; JSON lines are read too) of rows with ``prompt``
(the generation prompt), ``path1`` (the preferred image) and ``path2`` (the rejected one),
image paths relative to the file's folder; ``model1`` / ``model2``, ``confidence`` and
``choice_dist`` are not needed here.
"""

from __future__ import annotations

from pathlib import Path

from lightrft.adapters.datasets.prompt_rows import RowRef
from lightrft.adapters.datasets.rendering import PromptRenderer
from lightrft.adapters.datasets.reward_sets.media_pairs import media_item, media_pair, text_field
from lightrft.adapters.datasets.reward_sets.reward_set import (
    LoadedRewardSet,
    RewardSetOptions,
    collect,
)
from lightrft.adapters.datasets.reward_sets.table_files import table_refs
from lightrft.domain.types import PreferencePair


def load_hpdv3(path: Path, renderer: PromptRenderer, options: RewardSetOptions) -> LoadedRewardSet:
    """The pairs of an HPDv3 file (``path1`` chosen over ``path2``)."""

    def pair(ref: RowRef) -> PreferencePair:
        prompt = text_field(ref.row, "prompt", ref.where)
        chosen = media_item("images", ref.row.get("path1"), ref, "path1")
        rejected = media_item("images", ref.row.get("path2"), ref, "path2")
        return media_pair(ref.uid, prompt, {"images": [chosen]}, {"images": [rejected]}, renderer)

    refs, bad_lines = table_refs(path, (".json", ".jsonl"), options.on_bad_row)
    return collect(refs, pair, options.on_bad_row, bad_lines)
