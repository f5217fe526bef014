"""Loaders of the published reward data sets, by name (:data:`REWARD_DATASETS`), and
``name:path`` lists of them (:func:`load_reward_data`).

Each loader reads one set's published layout from local files into preference pairs
(``PreferencePair``; responses that are media are laid out as
:mod:`~lightrft.adapters.datasets.reward_sets.media_pairs` says) or, for the process-reward
layout, step-labelled solutions (``StepLabelledExample`` of
:mod:`~lightrft.domain.process_rewards`, the PRM's row type); a bad record is named by file
and row.
"""

from lightrft.adapters.datasets.reward_sets.media_pairs import RESPONSE_MARKERS, response_payload
from lightrft.adapters.datasets.reward_sets.registry import DEFAULT_REWARD_DATASET, REWARD_DATASETS
from lightrft.adapters.datasets.reward_sets.reward_mix import load_reward_data, load_reward_pairs
from lightrft.adapters.datasets.reward_sets.reward_set import (
    LoadedRewardSet,
    RewardSet,
    RewardSetOptions,
)
from lightrft.adapters.datasets.reward_sets.step_rows import StepRowSpec

__all__ = [
    "DEFAULT_REWARD_DATASET",
    "REWARD_DATASETS",
    "RESPONSE_MARKERS",
    "LoadedRewardSet",
    "RewardSet",
    "RewardSetOptions",
    "StepRowSpec",
    "load_reward_data",
    "load_reward_pairs",
    "response_payload",
]
