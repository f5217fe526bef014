"""This project's own preference rows (:mod:`~lightrft.adapters.datasets.preferences`) as a
registered reward data set, so a ``name:path`` list can mix them with the published sets."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lightrft.adapters.datasets.preferences import load_preferences
from lightrft.adapters.datasets.rendering import PromptRenderer
from lightrft.adapters.datasets.reward_sets.reward_set import LoadedRewardSet, RewardSetOptions


def load_plain_preferences(
    path: Path, renderer: PromptRenderer, options: RewardSetOptions
) -> LoadedRewardSet:
    """Pairs of this project's own preference rows (:mod:`~lightrft.adapters.datasets.
    preferences`), columns from ``options.preference_spec``."""
    spec = replace(options.preference_spec, on_bad_row=options.on_bad_row)
    pairs, skipped = load_preferences(path, renderer, spec)
    return LoadedRewardSet(pairs, skipped)
