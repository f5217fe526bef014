"""The typed face of the dependency-injector :class:`Container` that the verbs training a
policy share (``train``, ``demo``, ``sft``): every part with its port type, built on first
request and once (the container's singletons)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, cast

from dependency_injector import providers
from torch import Tensor

from lightrft.adapters.distributed import TorchCollective
from lightrft.domain.ports import CheckpointStore, Collective, Policy, Strategy, Tracker
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.container import Container
from lightrft.entrypoints.roots.tokenizer import Tokenizer


class ExportablePolicy(Policy, Protocol):
    """A policy that writes itself as a Hugging Face directory (and, under LoRA, its adapter)."""

    @property
    def uses_lora(self) -> bool: ...

    def export_hf(
        self, directory: str | Path, *, state: Mapping[str, Tensor] | None = None
    ) -> Path: ...

    def export_adapter(
        self, directory: str | Path, *, state: Mapping[str, Tensor] | None = None
    ) -> Path | None: ...


class ModelRunRoot:
    """A policy, its strategy, the run's collective, tracker and checkpoints."""

    def __init__(self, container: Container) -> None:
        self._container = container

    def replace_config(self, config: RunConfig) -> None:
        """Builds everything not built yet from ``config`` instead."""
        self._container.config.override(providers.Object(config))

    def collective(self) -> Collective:
        """Over the data-parallel ranks (one per sequence-parallel group)."""
        return self._container.collective()

    def process(self) -> tuple[int, int]:
        """(rank, world size) of this process among all processes."""
        return self._container.process()

    def process_collective(self) -> Collective:
        """A collective over every process: the data-parallel one, or with sequence
        parallelism (whose data-parallel ranks are not all processes) the default group."""
        _, world = self.process()
        collective = self.collective()
        return TorchCollective() if world != collective.world_size else collective

    def tokenizer(self) -> Tokenizer:
        return cast(Tokenizer, self._container.tokenizer())

    def tracker(self) -> Tracker:
        return self._container.tracker()

    def use_tracker(self, tracker: Tracker) -> None:
        """``tracker`` for everything built from now on (the cycle logs to it)."""
        self._container.tracker.override(tracker)

    def checkpoints(self) -> CheckpointStore:
        return self._container.checkpoints()

    def policy(self) -> ExportablePolicy:
        return cast(ExportablePolicy, self._container.policy())

    def policy_strategy(self) -> Strategy:
        """The policy's strategy, prepared."""
        return cast(Strategy, self._container.policy_strategy())
