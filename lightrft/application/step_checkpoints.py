"""Run state of a single-model trainer (SFT, reward model): step, strategy state, RNG.

Saved through a :class:`CheckpointStore`; resumed from the newest checkpoint intact on every
rank (:func:`~lightrft.application.checkpoint_resume.load_newest_intact`), like the RL cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog
import torch

from lightrft.application.checkpoint_resume import load_newest_intact
from lightrft.domain.checkpoint_fit import CheckpointShapeError
from lightrft.domain.ports import CheckpointStore, Collective, Strategy

log = structlog.get_logger(__name__)


class StepCheckpoints:
    """Checkpoints of ``strategy`` numbered by optimizer step; ``name`` prefixes log events."""

    def __init__(
        self,
        name: str,
        strategy: Strategy,
        store: CheckpointStore | None,
        collective: Collective | None = None,
    ) -> None:
        self.name, self.strategy, self.store, self.collective = name, strategy, store, collective

    def state_dict(self, step: int) -> dict[str, Any]:
        """Step, strategy state (weights, optimizer, schedule) and the torch RNG."""
        return {
            "step": step,
            "strategy": self.strategy.state_dict(),
            "torch_rng": torch.get_rng_state(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> int:
        """Restores :meth:`state_dict`; returns its step."""
        self.strategy.load_state_dict(state["strategy"])
        torch.set_rng_state(state["torch_rng"])
        return int(state["step"])

    def save(self, step: int) -> None:
        """Saves the state of ``step`` through the store."""
        if self.store is None:
            raise ValueError("no CheckpointStore was given")
        self.store.save(step, self.state_dict(step))
        log.info(f"{self.name}.checkpoint_saved", step=step)

    def resume(self) -> int | None:
        """Loads the newest intact checkpoint; returns its step, or None when there is none."""
        if self.store is None:
            return None
        found = load_newest_intact(self.store, self.collective)
        if found is None:
            return None
        try:
            step = self.load_state_dict(found[1])
        except CheckpointShapeError as exc:
            raise exc.at_step(found[0]) from None
        log.info(f"{self.name}.resumed", step=step)
        return step
