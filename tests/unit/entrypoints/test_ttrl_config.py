"""The ttrl reward source from a config: validated, built through the reward registry."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lightrft.adapters.rewards import MajorityVoteReward
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from lightrft.entrypoints.config.loading import ConfigError, load_config
from lightrft.entrypoints.wiring import reward_sources  # noqa: F401  (registers builders)
from lightrft.entrypoints.wiring.registries import REWARD_SOURCES, BuildContext, build


def test_ttrl_source_builds_and_scores() -> None:
    config = load_config(
        None, {"reward.sources": [{"type": "ttrl", "disagree_score": -1.0}]}, algorithm="grpo"
    )
    context = BuildContext(config, Path("."), torch.device("cpu"), None, lambda: None)  # type: ignore[arg-type,return-value]
    source = build(REWARD_SOURCES, config.reward.sources[0], context)
    assert isinstance(source, MajorityVoteReward) and source.name == "ttrl"
    prompt = PromptRecord("p", "q", (1,))
    texts = ["#### 3", "#### 3", "#### 4"]
    samples = [RewardSample(prompt, Completion(0, (1,), t, "stop")) for t in texts]
    assert source.score(samples).scores.tolist() == [1.0, 1.0, -1.0]


def test_ttrl_needs_groups() -> None:
    with pytest.raises(ConfigError, match="n_samples_per_prompt must be >= 2"):
        load_config(
            None,
            {
                "reward.sources": [{"type": "ttrl"}],
                "rollout.n_samples_per_prompt": 1,
                "algorithm.advantage_estimator": "reinforce_pp",
            },
        )
