"""Embedding API: build LightRFT's services from a config without the CLI.

from lightrft.entrypoints.api import build_cycle
from lightrft.entrypoints.config import load_config

cycle = build_cycle(load_config(algorithm="grpo"), engine=my_engine)  # any port overridable
cycle.run()
"""

from __future__ import annotations

from typing import Any

from dependency_injector import providers

from lightrft.application.cycle import RLCycle
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.container import Container
from lightrft.entrypoints.wiring.registrations import register_builtins


def build_container(config: RunConfig, **overrides: Any) -> Container:
    """A container for ``config`` whose named providers are replaced by the given objects.

    Names are the container's providers: ``engine``, ``policy``, ``policy_strategy``,
    ``reward_sources``, ``prompts``, ``eval_prompts``, ``tracker``, ``checkpoints``, ...
    """
    register_builtins()
    container = Container(config=providers.Object(config))
    for name, value in overrides.items():
        provider = getattr(container, name, None)
        if not isinstance(provider, providers.Provider):
            raise ValueError(f"cannot override {name!r}: the container has no such provider")
        provider.override(providers.Object(value))
    return container


def build_cycle(config: RunConfig, **overrides: Any) -> RLCycle:
    """The colocated RL cycle for ``config``, with any provider overridden (see above)."""
    return build_container(config, **overrides).cycle()  # type: ignore[no-any-return]
