"""ProcessRewardTrainer: step classification of a process reward model on step-labelled rows.

Shapes: B rows per step (on all ranks together), M rows per micro-batch, N steps.

The loop, checkpoints and exact resume are :class:`~lightrft.application.step_trainer.
StepTrainer`'s; the batch order is the reward-model trainer's (step s of epoch e reads batch
s of a seeded permutation e). One step scores each rank's rows in micro-batches: the logits
of the two label tokens at every step end, the loss
sum_steps BCE(sigmoid(l_+ - l_-), y) / (steps of this rank's rows)
(:func:`~lightrft.domain.process_rewards.step_classification_loss`) back-propagated per
micro-batch, then one strategy step. Held out: the step accuracy (p(+) > 0.5 agrees with
y > 0.5), the loss, and the accuracy of the first bad step (the first step with p < 0.5 is
the first step labelled bad, or none of each: ProcessBench's error-step identification).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import structlog
import torch
from torch import Tensor

from lightrft.application.reward_model_training import RewardTrainParams
from lightrft.application.seeded_batch_trainer import SeededBatchTrainer, inference
from lightrft.domain.ports import (
    CheckpointStore,
    Collective,
    Strategy,
    Tracker,
    TrainableProcessRewardModel,
)
from lightrft.domain.process_rewards import (
    StepLabelledExample,
    step_classification_loss,
    step_probabilities,
)

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class StepEval:
    """Held-out results: step accuracy, mean loss per step, first-bad-step accuracy."""

    step_accuracy: float
    loss: float
    first_error_accuracy: float
    steps: int

    def metrics(self, prefix: str = "eval") -> dict[str, float]:
        """Scalars for a tracker."""
        return {
            f"{prefix}/step_accuracy": self.step_accuracy,
            f"{prefix}/loss": self.loss,
            f"{prefix}/first_error_accuracy": self.first_error_accuracy,
        }


def _labels(examples: Sequence[StepLabelledExample], device: torch.device) -> Tensor:
    """The step labels of ``examples`` in order (N,): the targets, probabilities in [0, 1]
    (a row kept with its data set's own numbers, ``label_range=None``, may not be one)."""
    for e in examples:
        if any(not 0.0 <= y <= 1.0 for y in e.labels):
            name = e.uid or "a row"
            raise ValueError(f"{name}: step labels {e.labels} are not probabilities in [0, 1]")
    return torch.tensor([y for e in examples for y in e.labels], device=device)


def _first_bad(flags: Sequence[bool]) -> int:
    """Index of the first False, or -1."""
    return next((i for i, good in enumerate(flags) if not good), -1)


def evaluate_steps(
    model: TrainableProcessRewardModel,
    examples: Sequence[StepLabelledExample],
    micro_batch_size: int = 8,
) -> StepEval:
    """:class:`StepEval` of ``examples`` in eval mode without gradients."""
    if not examples:
        raise ValueError("evaluate needs at least one row")
    hits = losses = first_hits = 0.0
    steps = 0
    with inference(model):
        for start in range(0, len(examples), micro_batch_size):
            chunk = examples[start : start + micro_batch_size]
            positive, negative = model.example_logits(chunk)
            labels = _labels(chunk, positive.device)
            probs = step_probabilities(positive, negative)
            hits += float(((probs > 0.5) == (labels > 0.5)).sum())
            losses += float(step_classification_loss(positive, negative, labels).sum())
            steps += len(labels)
            offset = 0
            for e in chunk:
                k = len(e.labels)
                predicted = [bool(p > 0.5) for p in probs[offset : offset + k]]
                first_hits += _first_bad(predicted) == _first_bad([y > 0.5 for y in e.labels])
                offset += k
    return StepEval(hits / steps, losses / steps, first_hits / len(examples), steps)


class ProcessRewardTrainer(SeededBatchTrainer):
    """Trains ``model`` with ``strategy`` (already ``prepare``d on ``model.module``)."""

    params: RewardTrainParams
    checkpoint_name = "prm"

    def __init__(
        self,
        model: TrainableProcessRewardModel,
        strategy: Strategy,
        train_rows: Sequence[StepLabelledExample],
        params: RewardTrainParams,
        *,
        eval_rows: Sequence[StepLabelledExample] = (),
        collective: Collective | None = None,
        checkpoints: CheckpointStore | None = None,
        tracker: Tracker | None = None,
    ) -> None:
        super().__init__(
            strategy,
            train_rows,
            params,
            eval_items=eval_rows,
            collective=collective,
            checkpoints=checkpoints,
            tracker=tracker,
            noun="rows",
        )
        self.model, self.params = model, params
        self.train_rows, self.eval_rows = train_rows, eval_rows

    def evaluation_metrics(self) -> dict[str, float]:
        return self.evaluate(self.eval_rows).metrics()

    def evaluate(self, rows: Sequence[StepLabelledExample]) -> StepEval:
        """Held-out step metrics of ``rows`` under the current weights (this rank)."""
        return evaluate_steps(self.model, rows, self.params.micro_batch_size)

    def train_step(self) -> dict[str, float]:
        """One optimizer step on the next batch; returns its metrics."""
        rows = self.rank_items()
        steps = sum(len(r.labels) for r in rows)
        self.model.module.train()
        loss_sum = correct = 0.0
        size = self.params.micro_batch_size
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            positive, negative = self.model.example_logits(chunk)
            labels = _labels(chunk, positive.device)
            losses = step_classification_loss(positive, negative, labels)
            self.strategy.backward(losses.sum() / steps)
            loss_sum += float(losses.detach().sum())
            probs = step_probabilities(positive.detach(), negative.detach())
            correct += float(((probs > 0.5) == (labels > 0.5)).sum())
        totals = self.sum_over_ranks([loss_sum, correct, float(steps)])
        loss = totals[0] / totals[2]
        result = self.strategy.step(skip_reason=None if math.isfinite(loss) else "non-finite loss")
        self.step += 1
        log.debug("prm.step", step=self.step, loss=loss)
        return {
            "train/loss": loss,
            "train/step_accuracy": totals[1] / totals[2],
            "train/grad_norm": result.grad_norm,
            "train/lr": result.lr,
            "train/skipped": float(result.skipped),
        }
