"""SftTrainer: supervised fine-tuning over the ports (Policy, Strategy, CheckpointStore,
Tracker, Collective).

Loss of one optimizer step = sum of -log p(token) over the trained tokens of the step's
examples (on every rank) / the number of those tokens (token mean over the whole step), so
the gradient does not depend on how the step is cut into micro-batches or ranks. Micro-batches
hold ``micro_batch_size`` examples or, with ``max_tokens_per_micro_batch``, as many examples
as fit a token budget (the policy decides whether a micro-batch runs padded or packed into one
row; both give the same log-probs).

Data order: epoch e visits the examples in a permutation drawn from ``seed + e``; step s takes
the s-th slice of ``batch_size x world_size`` examples (an epoch's last partial slice is
dropped when ``drop_last``), and rank r the r-th part of it. The order is a function of the
step number alone, which makes resuming exact.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import structlog
import torch
from torch import Tensor

from lightrft.application.batching import split_by_count, split_by_token_budget
from lightrft.application.step_trainer import StepTrainer
from lightrft.domain.ports import CheckpointStore, Collective, Policy, Strategy, Tracker
from lightrft.domain.sft import SftExample, masked_nll_sum, sft_batch

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class SftParams:
    """Schedule of supervised fine-tuning. ``batch_size`` is examples per step per rank."""

    epochs: int = 1
    batch_size: int = 8
    micro_batch_size: int = 4
    max_tokens_per_micro_batch: int | None = None
    total_steps: int | None = None  # None: every epoch in full
    seed: int = 0
    pad_token_id: int = 0
    eval_every: int | None = None  # also before the first and after the last step
    eval_batch_size: int = 8
    checkpoint_every: int | None = None

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "micro_batch_size", "eval_batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("max_tokens_per_micro_batch", "total_steps", "eval_every", "checkpoint_every"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1 or None, got {value}")


class _OneRank:
    rank, world_size = 0, 1

    def all_reduce_sum(self, tensor: Tensor) -> Tensor:
        return tensor.clone()


class SftTrainer(StepTrainer):
    """Trains ``policy`` (through its prepared ``strategy``) on ``train_data``."""

    checkpoint_name = "sft"

    def __init__(
        self,
        *,
        policy: Policy,
        strategy: Strategy,
        train_data: Sequence[SftExample],
        params: SftParams,
        tracker: Tracker | None = None,
        checkpoints: CheckpointStore | None = None,
        eval_data: Sequence[SftExample] | None = None,
        collective: Collective | None = None,
    ) -> None:
        self.policy, self.strategy, self.params = policy, strategy, params
        self.train_data, self.eval_data = train_data, eval_data
        self.tracker, self.checkpoints = tracker, checkpoints
        self.collective: Collective = collective or _OneRank()
        self.global_batch = params.batch_size * self.collective.world_size
        if len(train_data) < self.global_batch:
            raise ValueError(
                f"{len(train_data)} training examples are fewer than one step's batch "
                f"(batch_size {params.batch_size} x {self.collective.world_size} ranks)"
            )
        self.step = 0
        self.history: list[dict[str, float]] = []
        self.initial_eval: dict[str, float] | None = None  # before the first step

    # -- schedule ---------------------------------------------------------------------

    @property
    def steps_per_epoch(self) -> int:
        """Full global batches in one pass over the data (a partial last one is dropped)."""
        return len(self.train_data) // self.global_batch

    @property
    def total_steps(self) -> int:
        """``params.total_steps`` or every step of every epoch."""
        return self.params.total_steps or self.params.epochs * self.steps_per_epoch

    def step_indices(self, step: int) -> list[int]:
        """This rank's example indices of optimizer step ``step``."""
        epoch, within = divmod(step, self.steps_per_epoch)
        gen = torch.Generator().manual_seed(self.params.seed * 1_000_003 + epoch)
        order = torch.randperm(len(self.train_data), generator=gen)
        start = within * self.global_batch + self.collective.rank * self.params.batch_size
        return order[start : start + self.params.batch_size].tolist()

    # -- training ---------------------------------------------------------------------

    def before_first_step(self) -> None:
        if self._evaluating:
            self.initial_eval = self.evaluate()
            self.log(self.initial_eval, 0)

    @property
    def _evaluating(self) -> bool:
        return self.eval_data is not None and self.params.eval_every is not None

    @property
    def checkpoint_every(self) -> int | None:
        return self.params.checkpoint_every

    def evaluation_due(self, last: bool) -> bool:
        every = self.params.eval_every
        if self.eval_data is None or not every:
            return False
        return self.step % every == 0 or last

    def evaluation_metrics(self) -> dict[str, float]:
        return self.evaluate()

    def train_step(self) -> dict[str, float]:
        """One optimizer step; returns its metrics and advances :attr:`step`."""
        started = time.perf_counter()
        examples = [self.train_data[i] for i in self.step_indices(self.step)]
        local_tokens = sum(e.num_trained for e in examples)
        counts = self.collective.all_reduce_sum(torch.tensor([float(local_tokens)]))
        total_tokens = float(counts[0])
        nll_total = 0.0
        for micro in self._micro_batches(examples):
            # an empty micro-batch (a rank with fewer than the busiest) runs the first row
            # with weight 0, so a sharded strategy's collectives run as often on every rank
            weight = 1.0 if micro else 0.0
            batch = sft_batch(micro or examples[:1], self.params.pad_token_id)
            logprobs = self.policy.forward(batch).logprobs
            nll = masked_nll_sum(logprobs, batch.response_mask.to(logprobs.device)) * weight
            nll_total += float(nll.detach())
            # strategies average gradients over ranks; the loss is already a global mean
            self.strategy.backward(nll / total_tokens * self.collective.world_size)
        result = self.strategy.step()
        nll_global = float(self.collective.all_reduce_sum(torch.tensor([nll_total]))[0])
        self.step += 1
        elapsed = time.perf_counter() - started
        return {
            "train/loss": nll_global / total_tokens,
            "train/tokens": total_tokens,
            "train/grad_norm": result.grad_norm,
            "train/lr": result.lr,
            "train/skipped_steps": float(result.skipped),
            "train/epoch": self.step / self.steps_per_epoch,
            "time/step_s": elapsed,
            "throughput/tokens_per_s": sum(e.num_tokens for e in examples) / max(elapsed, 1e-9),
        }

    def _micro_batches(self, examples: list[SftExample]) -> list[list[SftExample]]:
        """Micro-batches of ``examples``; with a token budget as many on every rank, some
        possibly empty (see :func:`split_by_token_budget`)."""
        index = torch.arange(len(examples))
        budget = self.params.max_tokens_per_micro_batch
        if budget is None:
            parts = split_by_count(index, self.params.micro_batch_size)
        else:
            sizes = torch.tensor([e.num_tokens for e in examples])
            parts = split_by_token_budget(index, sizes, budget, self.collective)
        return [[examples[i] for i in part.tolist()] for part in parts]

    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        """``eval/loss`` (token mean of -log p over every trained eval token, all ranks)."""
        if not self.eval_data:
            raise ValueError("no evaluation examples")
        data, size = self.eval_data, self.params.eval_batch_size
        rank, world = self.collective.rank, self.collective.world_size
        nll, tokens = 0.0, 0.0
        for start in range(rank * size, len(data), size * world):
            batch = sft_batch(data[start : start + size], self.params.pad_token_id)
            logprobs = self.policy.forward(batch).logprobs
            nll += float(masked_nll_sum(logprobs, batch.response_mask.to(logprobs.device)))
            tokens += float(batch.response_mask.sum())
        totals = self.collective.all_reduce_sum(torch.tensor([nll, tokens], dtype=torch.float64))
        loss = float(totals[0] / totals[1])
        return {"eval/loss": loss, "eval/perplexity": math.exp(min(loss, 50.0))}
