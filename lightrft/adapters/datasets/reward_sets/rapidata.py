"""Rapidata human preferences: text-to-video, image-to-video and text-to-image.

Published layouts (parquet: one file, or a folder of shards):

- text-to-video (``Rapidata/text-2-video-human-preferences-*``): ``prompt``, the two
  videos ``file_name1`` / ``file_name2`` under the ``videos`` (or ``Videos``) folder next to
  the parquet's folder, and the annotators' weighted scores ``weighted_results1_<m>`` /
  ``weighted_results2_<m>`` for the criteria ``Preference``, ``Coherence``, ``Alignment``;
- image-to-video (``Rapidata/image-2-video-human-preferences-*``): the same, plus
  ``prompt_asset``, the initial image (an HF ``Image`` value), which belongs to the prompt;
  a ``file_name`` that is a URL names ``videos/<its folder>/<its file>``;
- text-to-image (``Rapidata/*image*preference*``): ``prompt``, ``image1`` / ``image2`` (HF
  ``Image`` values, or paths from the parquet's folder) and either
  ``weighted_results_image1_<m>`` / ``weighted_results_image2_<m>`` or ``votes_image1`` /
  ``votes_image2``.

The response with the higher sum of its criteria (or more votes) is chosen; equal sums are
ties, left out. A row with none of the score columns is a bad row.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lightrft.adapters.datasets.bad_rows import BadRowError
from lightrft.adapters.datasets.prompt_rows import RowRef
from lightrft.adapters.datasets.rendering import PromptRenderer
from lightrft.adapters.datasets.reward_sets.media_pairs import (
    media_item,
    media_pair,
    text_field,
    winner,
)
from lightrft.adapters.datasets.reward_sets.reward_set import (
    LoadedRewardSet,
    RewardSetOptions,
    collect,
)
from lightrft.adapters.datasets.reward_sets.table_files import table_refs
from lightrft.domain.types import PreferencePair

CRITERIA = ("Preference", "Coherence", "Alignment")


def _number(row: Mapping[str, Any], key: str, where: str) -> float | None:
    value = row.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadRowError(where, key, f"expected a number, got {value!r} in")
    return float(value)


def criteria_scores(ref: RowRef, columns: tuple[str, str]) -> tuple[float, float]:
    """Each response's summed criteria; ``columns``: the two key patterns with ``{m}`` for
    the criterion (a missing criterion counts 0; a row with none is a bad row)."""
    sums, found = [0.0, 0.0], False
    for side, pattern in enumerate(columns):
        for criterion in CRITERIA:
            value = _number(ref.row, pattern.format(m=criterion), ref.where)
            if value is not None:
                sums[side] += value
                found = True
    if not found:
        raise BadRowError(ref.where, columns[0].format(m=CRITERIA[0]), "missing key")
    return sums[0], sums[1]


def _video_folder(ref: RowRef) -> Path:
    root = (ref.base_dir or Path(".")).parent
    folder = root / "videos"
    return folder if folder.is_dir() or not (root / "Videos").is_dir() else root / "Videos"


def _video(ref: RowRef, key: str) -> str:
    name = ref.row.get(key)
    if isinstance(name, str) and name.startswith(("http://", "https://")):
        parts = name.rstrip("/").split("/")
        name = f"{parts[-2]}/{parts[-1]}"
    return str(media_item("videos", name, ref, key, base_dir=_video_folder(ref)))


def _load_videos(
    path: Path, renderer: PromptRenderer, options: RewardSetOptions, *, initial_image: bool
) -> LoadedRewardSet:
    def pair(ref: RowRef) -> PreferencePair | None:
        prompt = text_field(ref.row, "prompt", ref.where)
        first, second = criteria_scores(ref, ("weighted_results1_{m}", "weighted_results2_{m}"))
        videos = [_video(ref, "file_name1"), _video(ref, "file_name2")]
        images = (
            [media_item("images", ref.row.get("prompt_asset"), ref, "prompt_asset")]
            if initial_image
            else []
        )
        better = winner(first, second)
        if better is None:
            return None
        return media_pair(
            ref.uid,
            prompt,
            {"videos": [videos[better]]},
            {"videos": [videos[1 - better]]},
            renderer,
            prompt_images=images,
            where=ref.where,
        )

    refs, bad_lines = table_refs(path, (".parquet",), options.on_bad_row)
    return collect(refs, pair, options.on_bad_row, bad_lines)


def load_rapidata_t2v(
    path: Path, renderer: PromptRenderer, options: RewardSetOptions
) -> LoadedRewardSet:
    """The pairs of Rapidata text-to-video parquet files."""
    return _load_videos(path, renderer, options, initial_image=False)


def load_rapidata_i2v(
    path: Path, renderer: PromptRenderer, options: RewardSetOptions
) -> LoadedRewardSet:
    """The pairs of Rapidata image-to-video parquet files (the initial image in the prompt)."""
    return _load_videos(path, renderer, options, initial_image=True)


def _image_scores(ref: RowRef) -> tuple[float, float]:
    if any(f"weighted_results_image1_{m}" in ref.row for m in CRITERIA):
        return criteria_scores(ref, ("weighted_results_image1_{m}", "weighted_results_image2_{m}"))
    votes = [_number(ref.row, key, ref.where) for key in ("votes_image1", "votes_image2")]
    if votes[0] is None or votes[1] is None:
        key = "votes_image1" if votes[0] is None else "votes_image2"
        raise BadRowError(ref.where, key, "missing key (and no weighted_results_image1_*)")
    return votes[0], votes[1]


def load_rapidata_t2i(
    path: Path, renderer: PromptRenderer, options: RewardSetOptions
) -> LoadedRewardSet:
    """The pairs of Rapidata text-to-image parquet files."""

    def pair(ref: RowRef) -> PreferencePair | None:
        prompt = text_field(ref.row, "prompt", ref.where)
        first, second = _image_scores(ref)
        images = [media_item("images", ref.row.get(k), ref, k) for k in ("image1", "image2")]
        better = winner(first, second)
        if better is None:
            return None
        chosen, rejected = images[better], images[1 - better]
        return media_pair(ref.uid, prompt, {"images": [chosen]}, {"images": [rejected]}, renderer)

    refs, bad_lines = table_refs(path, (".parquet",), options.on_bad_row)
    return collect(refs, pair, options.on_bad_row, bad_lines)
