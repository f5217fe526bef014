"""``InMemoryCheckpointStore``: the ``CheckpointStore`` port in a dict, with crash injection."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


class SimulatedCrash(RuntimeError):
    """Raised by a save that ``fail_next_save`` interrupted half-way."""


class InMemoryCheckpointStore:
    """Keeps deep copies of saved states; ``keep_last`` newest complete ones survive.

    Set ``fail_next_save = True`` to make the next ``save`` write half of the state and
    raise :class:`SimulatedCrash`: the half-written checkpoint is never reported by
    ``latest_step`` nor loadable, and earlier checkpoints are untouched. Records ``saves``
    (completed), ``failed_saves``, ``loads`` and ``partial`` (the half-written states).
    """

    def __init__(self, keep_last: int | None = None) -> None:
        if keep_last is not None and keep_last < 1:
            raise ValueError(f"keep_last must be >= 1 or None, got {keep_last}")
        self.keep_last = keep_last
        self.fail_next_save = False
        self._complete: dict[int, dict[str, Any]] = {}
        self.partial: dict[int, dict[str, Any]] = {}
        self.saves = 0
        self.failed_saves = 0
        self.loads = 0

    def save(self, step: int, state: Mapping[str, Any]) -> None:
        """Stores a deep copy of ``state`` for ``step``, then prunes to ``keep_last``."""
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        staged = {key: copy.deepcopy(value) for key, value in state.items()}
        if self.fail_next_save:
            self.fail_next_save = False
            self.failed_saves += 1
            keys = list(staged)
            self.partial[step] = {k: staged[k] for k in keys[: len(keys) // 2]}
            raise SimulatedCrash(f"simulated crash while saving step {step}")
        self._complete[step] = staged  # the commit: one dict assignment
        self.partial.pop(step, None)
        self.saves += 1
        if self.keep_last is not None:
            for old in sorted(self._complete)[: -self.keep_last]:
                del self._complete[old]

    def latest_step(self) -> int | None:
        """The newest complete checkpoint's step, or ``None``."""
        return max(self._complete, default=None)

    def steps(self) -> list[int]:
        """Steps of all complete checkpoints, ascending."""
        return sorted(self._complete)

    def load(self, step: int) -> dict[str, Any]:
        """A deep copy of the state saved for ``step``; ``KeyError`` if there is none."""
        if step not in self._complete:
            raise KeyError(f"no complete checkpoint for step {step}; have {self.steps()}")
        self.loads += 1
        return copy.deepcopy(self._complete[step])
