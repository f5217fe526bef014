"""OmniRewardBench (HongbangYuan/OmniRewardBench): text-to-image, -video and -audio
preferences.

Published layout: one parquet file per task, in a folder next to ``media_data`` (the file
at ``<root>/<task>/<file>.parquet``, the media under ``<root>/media_data``); rows with
``prompt``, the two generations (``response1_path`` / ``response2_path`` for images and
audio, ``response1`` / ``response2`` for videos: paths under ``media_data``) and
``criteria_preference``: ``response1`` or ``response2`` (anything else is a tie, left out);
``criteria``, ``model1`` / ``model2`` and ``id`` are not needed here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lightrft.adapters.datasets.bad_rows import BadRowError
from lightrft.adapters.datasets.prompt_rows import RowRef
from lightrft.adapters.datasets.rendering import PromptRenderer
from lightrft.adapters.datasets.reward_sets.media_pairs import (
    MediaKind,
    media_item,
    media_pair,
    text_field,
)
from lightrft.adapters.datasets.reward_sets.reward_set import (
    LoadedRewardSet,
    RewardSetOptions,
    collect,
)
from lightrft.adapters.datasets.reward_sets.table_files import table_refs
from lightrft.domain.types import PreferencePair

MEDIA_FOLDER = "media_data"
CHOICES = {"response1": 0, "response2": 1}

OmniLoader = Callable[[Path, PromptRenderer, RewardSetOptions], LoadedRewardSet]


def omnirewardbench_loader(kind: MediaKind, columns: tuple[str, str]) -> OmniLoader:
    """The loader of one OmniRewardBench task whose generations are ``kind`` in
    ``columns``."""

    def load(path: Path, renderer: PromptRenderer, options: RewardSetOptions) -> LoadedRewardSet:
        def pair(ref: RowRef) -> PreferencePair | None:
            prompt = text_field(ref.row, "prompt", ref.where)
            choice = ref.row.get("criteria_preference")
            if choice is None:
                raise BadRowError(ref.where, "criteria_preference", "missing key")
            better = CHOICES.get(str(choice))
            if better is None:  # a tie
                return None
            media_root = (ref.base_dir or Path(".")).parent / MEDIA_FOLDER
            items = [
                media_item(
                    kind,
                    ref.row.get(c),
                    ref,
                    c,
                    base_dir=media_root,
                    rate=options.audio_sampling_rate,
                )
                for c in columns
            ]
            chosen, rejected = items[better], items[1 - better]
            return media_pair(ref.uid, prompt, {kind: [chosen]}, {kind: [rejected]}, renderer)

        refs, bad_lines = table_refs(path, (".parquet",), options.on_bad_row)
        return collect(refs, pair, options.on_bad_row, bad_lines)

    return load


load_omnirewardbench_t2i = omnirewardbench_loader("images", ("response1_path", "response2_path"))
load_omnirewardbench_t2v = omnirewardbench_loader("videos", ("response1", "response2"))
load_omnirewardbench_t2a = omnirewardbench_loader("audios", ("response1_path", "response2_path"))
