"""ImageRewardDB (zai-org/ImageRewardDB): text-to-image generations ranked per prompt.

Published layout: JSON shards (``images/<split>/<shard>/<shard>.json``, each one array) of
rows, one per generated image: ``prompt_id``, ``prompt``, ``image_path`` (relative to the
data set's root, e.g. ``images/train/train_1/<id>.webp``) and ``rank`` (1 is best within
the prompt's images); ``overall_rating``, ``classification`` and the other ratings are not
needed here. Give the root, a split's folder or one shard: the shards below it (JSON files
named after their folder) are read and
each ``image_path`` is found from the shard's folder or the nearest folder above it holding
it.

Rows are grouped by ``prompt_id`` (in order of first appearance); every two images of a
prompt with different ranks make one pair, the lower rank chosen; equal ranks are ties,
left out. A pair's uid is ``<chosen row uid>><rejected row uid>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from lightrft.adapters.datasets.bad_rows import BadRowError, BadRows
from lightrft.adapters.datasets.prompt_rows import RowRef
from lightrft.adapters.datasets.rendering import PromptRenderer
from lightrft.adapters.datasets.reward_sets.media_pairs import media_item, media_pair, text_field
from lightrft.adapters.datasets.reward_sets.reward_set import LoadedRewardSet, RewardSetOptions
from lightrft.adapters.datasets.reward_sets.table_files import table_refs


@dataclass(frozen=True)
class _Ranked:
    uid: str
    prompt: str
    rank: float
    image: Any


def _image_root(ref: RowRef, image_path: Any) -> Path:
    """The shard's folder or the nearest one above it holding ``image_path``."""
    start = ref.base_dir or Path(".")
    if not isinstance(image_path, str):
        return start
    for folder in (start, *start.parents):
        if (folder / image_path).is_file():
            return folder
    return start


def _ranked(ref: RowRef) -> tuple[str, _Ranked]:
    row = ref.row
    prompt_id = row.get("prompt_id")
    if prompt_id is None:
        raise BadRowError(ref.where, "prompt_id", "missing key")
    rank = row.get("rank")
    if isinstance(rank, bool) or not isinstance(rank, int | float):
        raise BadRowError(ref.where, "rank", f"expected a number (1 is best), got {rank!r} in")
    prompt = text_field(row, "prompt", ref.where)
    root = _image_root(ref, row.get("image_path"))
    image = media_item("images", row.get("image_path"), ref, "image_path", base_dir=root)
    return str(prompt_id), _Ranked(ref.uid, prompt, float(rank), image)


def _is_shard(file: Path) -> bool:
    """A shard is named after its folder (``train_1/train_1.json``)."""
    return file.stem == file.parent.name


def load_image_reward_db(
    path: Path, renderer: PromptRenderer, options: RewardSetOptions
) -> LoadedRewardSet:
    """The pairs of the ImageRewardDB shards at or below ``path``."""
    refs, bad_lines = table_refs(
        path, (".json",), options.on_bad_row, recursive=True, keep=_is_shard
    )
    groups: dict[str, list[_Ranked]] = {}
    bad = BadRows(options.on_bad_row)
    for ref in refs:
        try:
            prompt_id, item = _ranked(ref)
        except BadRowError as error:
            bad.add(error)
            continue
        groups.setdefault(prompt_id, []).append(item)
    skipped = bad.check() + bad_lines
    pairs, ties = [], 0
    for items in groups.values():
        for a, b in combinations(items, 2):
            if a.rank == b.rank:
                ties += 1
                continue
            chosen, rejected = (a, b) if a.rank < b.rank else (b, a)
            pairs.append(
                media_pair(
                    f"{chosen.uid}>{rejected.uid}",
                    chosen.prompt,
                    {"images": [chosen.image]},
                    {"images": [rejected.image]},
                    renderer,
                )
            )
    return LoadedRewardSet(pairs, skipped, ties)
