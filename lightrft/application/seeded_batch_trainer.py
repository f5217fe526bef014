"""SeededBatchTrainer: what the reward-model trainers share around their loss.

Shape letters: B items per step (on all ranks together), N training items, S = floor(N / B)
steps per epoch.

A scalar reward model (pairs) and a process reward model (step-labelled rows) train alike:
step s of epoch e reads positions [(s mod S) B, (s mod S + 1) B) of a permutation seeded by
(seed, e), so the data order is a function of the step alone and a resumed run continues
exactly; each rank takes every world_size-th item of the batch; evaluation runs when
``eval_every`` divides the step and after the last one, if there are held-out items; sums
are reduced over the ranks. Subclasses add one optimizer step (:meth:`train_step`) and their
held-out metrics.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import torch
from torch import nn

from lightrft.application.step_trainer import StepTrainer
from lightrft.domain.ports import CheckpointStore, Collective, Strategy, Tracker


class BatchParams(Protocol):
    """The schedule of a reward-model run (``RewardTrainParams`` has these)."""

    @property
    def batch_size(self) -> int: ...
    @property
    def epochs(self) -> int: ...
    @property
    def total_steps(self) -> int | None: ...
    @property
    def eval_every(self) -> int | None: ...
    @property
    def checkpoint_every(self) -> int | None: ...
    @property
    def seed(self) -> int: ...


class HasModule(Protocol):
    """A trainable model: its network is ``module``."""

    @property
    def module(self) -> nn.Module: ...


@contextmanager
def inference(model: HasModule) -> Iterator[None]:
    """``model.module`` in eval mode without gradients; its mode is restored."""
    module = model.module
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        module.train(was_training)


class SeededBatchTrainer(StepTrainer):
    """The loop's schedule over ``train_items`` (see the module docstring); ``noun`` names
    the items in errors ("pairs", "rows")."""

    def __init__(
        self,
        strategy: Strategy,
        train_items: Sequence[Any],
        params: BatchParams,
        *,
        eval_items: Sequence[Any] = (),
        collective: Collective | None = None,
        checkpoints: CheckpointStore | None = None,
        tracker: Tracker | None = None,
        noun: str = "items",
    ) -> None:
        if len(train_items) < params.batch_size:
            raise ValueError(
                f"{len(train_items)} training {noun} is fewer than one batch ({params.batch_size})"
            )
        world = collective.world_size if collective is not None else 1
        if params.batch_size % world:
            raise ValueError(f"batch_size {params.batch_size} must divide by {world} ranks")
        self.strategy, self.params = strategy, params
        self._train_items, self._eval_items = train_items, eval_items
        self.collective, self.checkpoints, self.tracker = collective, checkpoints, tracker
        self.steps_per_epoch = len(train_items) // params.batch_size
        self.step = 0
        self.history: list[dict[str, float]] = []

    @property
    def total_steps(self) -> int:
        """``params.total_steps`` or every step of every epoch."""
        return self.params.total_steps or self.params.epochs * self.steps_per_epoch

    @property
    def checkpoint_every(self) -> int | None:
        return self.params.checkpoint_every

    @property
    def world_size(self) -> int:
        """The number of ranks (1 without a collective)."""
        return self.collective.world_size if self.collective is not None else 1

    def evaluation_due(self, last: bool) -> bool:
        every = self.params.eval_every
        return bool(self._eval_items) and (bool(every and self.step % every == 0) or last)

    def batch_indices(self, step: int) -> list[int]:
        """Indices of the items of ``step`` on all ranks (see the module docstring)."""
        epoch, position = divmod(step, self.steps_per_epoch)
        generator = torch.Generator().manual_seed(self.params.seed * 1_000_003 + epoch)
        order = torch.randperm(len(self._train_items), generator=generator)
        b = self.params.batch_size
        return order[position * b : (position + 1) * b].tolist()

    def rank_items(self) -> list[Any]:
        """This rank's share of the next step's batch (every world_size-th item)."""
        rank = self.collective.rank if self.collective is not None else 0
        indices = self.batch_indices(self.step)[rank :: self.world_size]
        return [self._train_items[i] for i in indices]

    def sum_over_ranks(self, values: list[float]) -> list[float]:
        """``values`` summed over the ranks (as they are on one)."""
        if self.collective is None or self.collective.world_size == 1:
            return values
        total = self.collective.all_reduce_sum(torch.tensor(values, dtype=torch.float64))
        return [float(v) for v in total.tolist()]
