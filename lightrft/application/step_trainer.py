"""StepTrainer: the loop of a single-model supervised trainer (SFT, reward model).

A subclass plugs in its loss through :meth:`StepTrainer.train_step` (one optimizer step:
micro-batches, loss, backward, strategy step) and its held-out metrics; the loop around them
is here once: step to ``total_steps`` (or ``max_steps`` more), save a checkpoint every
``checkpoint_every`` steps and after the last, evaluate when the subclass says it is due, log
on rank 0, and resume exactly from the newest intact checkpoint.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from lightrft.application.step_checkpoints import StepCheckpoints
from lightrft.domain.ports import CheckpointStore, Collective, Strategy, Tracker


class StepTrainer(ABC):
    """The shared loop. Subclasses set the attributes below in their constructor."""

    checkpoint_name: str  # prefixes checkpoint log events ("sft", "rm")
    strategy: Strategy
    checkpoints: CheckpointStore | None
    tracker: Tracker | None
    collective: Collective | None
    step: int
    history: list[dict[str, float]]

    @property
    @abstractmethod
    def total_steps(self) -> int:
        """Optimizer steps of the whole run."""

    @property
    @abstractmethod
    def checkpoint_every(self) -> int | None:
        """Steps between checkpoints (None: never)."""

    @abstractmethod
    def train_step(self) -> dict[str, float]:
        """One optimizer step; returns its metrics and advances :attr:`step`."""

    @abstractmethod
    def evaluation_due(self, last: bool) -> bool:
        """Whether to evaluate after the current step (``last``: it ends the run)."""

    @abstractmethod
    def evaluation_metrics(self) -> dict[str, float]:
        """Held-out metrics under the current weights."""

    def before_first_step(self) -> None:
        """Called by :meth:`run` when it starts at step 0 (after resuming found nothing)."""
        return None

    # -- the loop ---------------------------------------------------------------------

    def run(self, *, resume: bool = True, max_steps: int | None = None) -> list[dict[str, float]]:
        """Trains to ``total_steps`` (or ``max_steps`` more); returns the metric history."""
        if resume:
            self.resume()
        if self.step == 0:
            self.before_first_step()
        total = self.total_steps
        end = total if max_steps is None else min(total, self.step + max_steps)
        every = self.checkpoint_every
        while self.step < end:
            metrics = self.train_step()
            last = self.step == total
            if self.checkpoints is not None and every and (self.step % every == 0 or last):
                self.save_checkpoint()
            if self.evaluation_due(last):
                metrics.update(self.evaluation_metrics())
            self.log(metrics, self.step)
            self.history.append(metrics)
        return self.history

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        """Sends ``metrics`` to the tracker (rank 0 only)."""
        if self.tracker is not None and self.rank == 0:
            self.tracker.log_metrics(dict(metrics), step)

    @property
    def rank(self) -> int:
        """This process's rank (0 without a collective)."""
        return self.collective.rank if self.collective is not None else 0

    # -- checkpoints ------------------------------------------------------------------

    @property
    def _checkpoints(self) -> StepCheckpoints:
        """Checkpoints through ``self.checkpoints`` (read at each use: it may be replaced)."""
        return StepCheckpoints(
            self.checkpoint_name, self.strategy, self.checkpoints, self.collective
        )

    def state_dict(self) -> dict[str, Any]:
        """Step, strategy state (weights, optimizer, schedule) and the torch RNG."""
        return self._checkpoints.state_dict(self.step)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict`."""
        self.step = self._checkpoints.load_state_dict(state)

    def save_checkpoint(self) -> None:
        """Saves the state at the current step through the store."""
        self._checkpoints.save(self.step)

    def resume(self) -> bool:
        """Loads the newest intact checkpoint, if any; returns whether it did."""
        step = self._checkpoints.resume()
        if step is not None:
            self.step = step
        return step is not None
