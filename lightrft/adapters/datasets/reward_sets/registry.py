"""The reward data sets by name: ``REWARD_DATASETS.get(name).load(path, renderer, options)``.

The names are the original LightRFT's data-set prefixes (``hpdv3:/data/train.json``), plus
``rapidata-t2i``, ``omnirewardbench-t2a``, ``audio-alpaca``, ``process-reward`` and
``preferences`` (this project's own preference rows, the default of an unnamed path).
"""

from __future__ import annotations

from lightrft.adapters.datasets.reward_sets.audio_alpaca import load_audio_alpaca
from lightrft.adapters.datasets.reward_sets.hpdv3 import load_hpdv3
from lightrft.adapters.datasets.reward_sets.image_reward_db import load_image_reward_db
from lightrft.adapters.datasets.reward_sets.imagegen_cot_reward import load_imagegen_cot_reward
from lightrft.adapters.datasets.reward_sets.omnirewardbench import (
    load_omnirewardbench_t2a,
    load_omnirewardbench_t2i,
    load_omnirewardbench_t2v,
)
from lightrft.adapters.datasets.reward_sets.plain_preferences import load_plain_preferences
from lightrft.adapters.datasets.reward_sets.process_rewards import load_process_rewards
from lightrft.adapters.datasets.reward_sets.rapidata import (
    load_rapidata_i2v,
    load_rapidata_t2i,
    load_rapidata_t2v,
)
from lightrft.adapters.datasets.reward_sets.reward_set import RewardSet
from lightrft.domain.registry import Registry

REWARD_DATASETS: Registry[RewardSet] = Registry("reward data set")
DEFAULT_REWARD_DATASET = "preferences"
"""The set an unnamed path of a ``name:path`` list is read as."""

REWARD_DATASETS.add("preferences", RewardSet("pairs", "text", load_plain_preferences))
REWARD_DATASETS.add("hpdv3", RewardSet("pairs", "images", load_hpdv3))
REWARD_DATASETS.add(
    "imagerewarddb",
    RewardSet("pairs", "images", load_image_reward_db),
    aliases=("image-reward-db",),
)
REWARD_DATASETS.add(
    "imagegen-cot-reward-5k",
    RewardSet("pairs", "images", load_imagegen_cot_reward),
    aliases=("imagegen-cot-reward",),
)
REWARD_DATASETS.add("omnirewardbench-t2i", RewardSet("pairs", "images", load_omnirewardbench_t2i))
REWARD_DATASETS.add("omnirewardbench-t2v", RewardSet("pairs", "videos", load_omnirewardbench_t2v))
REWARD_DATASETS.add("omnirewardbench-t2a", RewardSet("pairs", "audios", load_omnirewardbench_t2a))
REWARD_DATASETS.add("rapidata-t2v", RewardSet("pairs", "videos", load_rapidata_t2v))
REWARD_DATASETS.add("rapidata-i2v", RewardSet("pairs", "videos", load_rapidata_i2v))
REWARD_DATASETS.add("rapidata-t2i", RewardSet("pairs", "images", load_rapidata_t2i))
REWARD_DATASETS.add("audio-alpaca", RewardSet("pairs", "audios", load_audio_alpaca))
REWARD_DATASETS.add(
    "process-reward", RewardSet("steps", "text", load_process_rewards), aliases=("math-shepherd",)
)
