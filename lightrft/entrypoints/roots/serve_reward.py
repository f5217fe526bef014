"""The root of ``lightrft serve-reward``: one ``reward.sources`` section's reward source, built
through the reward-source registry on the config's accelerator, as a run would build it."""

from __future__ import annotations

from pathlib import Path

from lightrft.domain.ports import RewardSource
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.components import ComponentSection
from lightrft.entrypoints.roots.policy_free import policy_free_context
from lightrft.entrypoints.wiring import models
from lightrft.entrypoints.wiring.registrations import register_builtins
from lightrft.entrypoints.wiring.registries import REWARD_SOURCES, build


def served_source(config: RunConfig, section: ComponentSection) -> RewardSource:
    """The reward source of ``section`` (one of ``config.reward.sources``)."""
    register_builtins()
    device = models.device_of(models.build_accelerator(config))
    context = policy_free_context(config, Path("."), device, who="a served reward source")
    source: RewardSource = build(REWARD_SOURCES, section, context)
    return source
