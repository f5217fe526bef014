"""Audio-Alpaca (declare-lab/audio-alpaca): text-to-audio preferences.

Published layout: parquet files (one file, or a folder of them) with ``prompt`` (the
generation prompt), ``chosen`` and ``rejected`` (HF ``Audio`` values as stored:
``{"bytes": <16-bit PCM .wav>, "path": ...}``) and ``strategy`` (how the pair was made, not
needed here). Clips are decoded; ``audio_sampling_rate`` refuses clips at another rate.
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


def load_audio_alpaca(
    path: Path, renderer: PromptRenderer, options: RewardSetOptions
) -> LoadedRewardSet:
    """The pairs of Audio-Alpaca parquet files (``chosen`` clip over ``rejected``)."""
    rate = options.audio_sampling_rate

    def pair(ref: RowRef) -> PreferencePair:
        prompt = text_field(ref.row, "prompt", ref.where)
        clips = {
            side: media_item("audios", ref.row.get(side), ref, side, rate=rate)
            for side in ("chosen", "rejected")
        }
        return media_pair(
            ref.uid,
            prompt,
            {"audios": [clips["chosen"]]},
            {"audios": [clips["rejected"]]},
            renderer,
        )

    refs, bad_lines = table_refs(path, (".parquet",), options.on_bad_row)
    return collect(refs, pair, options.on_bad_row, bad_lines)
