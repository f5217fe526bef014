"""RewardModelTrainer: pairwise training of a scalar reward model on preference pairs.

Shapes: B pairs per step (on all ranks together), M pairs per micro-batch, K score heads.

One step takes the next B pairs of a seeded per-epoch permutation (step s of epoch e reads
positions [(s mod S) B, (s mod S + 1) B) of permutation e, S = floor(N / B) steps per
epoch), so the data order is a function of the step alone and a resumed run continues
exactly. Each rank scores its share (every world_size-th pair) in micro-batches: the chosen
and rejected responses of a micro-batch go through one forward of 2M rows, the loss
sum_i -log sigmoid(r_c - r_r - m_i) / (pairs of this rank) is back-propagated per
micro-batch, then the strategy steps once. The pairwise loss is ``params.loss_type``
(:data:`~lightrft.domain.preference_losses.PAIR_LOSSES`: ``sigmoid`` = Bradley-Terry with
the margin, ``logexp``, ``hps``). A model with several named heads (one per aspect) is
trained per head: each head k adds its pairwise loss on the pair, oriented by the pair's
``head_labels`` (``rejected``: the aspect prefers the other response), or, for a ``tie``,
TIE_WEIGHT |s_c - s_r|; a pair's loss is the sum over its heads. Pairs with safety signs (a cost model's rows,
``PreferencePair.chosen_sign``) add Safe RLHF's sign term -log sigmoid(s c) per labeled
response (:func:`~lightrft.domain.preference.safety_sign_loss`). Evaluation reports held-out preference accuracy
and the distribution of margins r_c - r_r.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import structlog
import torch
from torch import Tensor

from lightrft.application.seeded_batch_trainer import SeededBatchTrainer, inference
from lightrft.domain.checks import check_non_negative, check_positive
from lightrft.domain.ports import (
    CheckpointStore,
    Collective,
    Strategy,
    Tracker,
    TrainableRewardModel,
)
from lightrft.domain.preference import safety_sign_loss
from lightrft.domain.preference_losses import PAIR_LOSSES, TIE_WEIGHT, tie_loss
from lightrft.domain.rewards import RunningMoments
from lightrft.domain.types import PreferencePair

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RewardTrainParams:
    """How long and in which batches to train. ``total_steps=None``: ``epochs`` full passes.

    ``margin`` is added to every pair's own margin (read by the ``sigmoid`` loss only, as in
    the original). ``loss_type``: a name of ``PAIR_LOSSES``. ``eval_every`` /
    ``checkpoint_every`` count steps (``None``: only at the end / never).
    """

    batch_size: int = 16
    micro_batch_size: int = 8
    epochs: int = 1
    total_steps: int | None = None
    margin: float = 0.0
    loss_type: str = "sigmoid"
    eval_every: int | None = None
    checkpoint_every: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        check_positive("batch_size", self.batch_size)
        check_positive("micro_batch_size", self.micro_batch_size)
        check_positive("epochs", self.epochs)
        check_non_negative("margin", self.margin)
        PAIR_LOSSES.get(self.loss_type)
        for name in ("total_steps", "eval_every", "checkpoint_every"):
            value = getattr(self, name)
            if value is not None:
                check_positive(name, value)


@dataclass(frozen=True)
class PreferenceEval:
    """Held-out results: accuracy, mean loss, and the margins r_c - r_r (P,)."""

    accuracy: float
    loss: float
    margins: Tensor
    sign_accuracy: float | None = None  # cost-model rows: labeled responses whose sign is right
    head_accuracy: Mapping[str, float] = field(default_factory=dict)  # several heads: each one's

    def metrics(self, prefix: str = "eval") -> dict[str, float]:
        """Scalars for a tracker: accuracy, loss, margin mean/std and quartiles."""
        m = self.margins.double()
        q = torch.quantile(m, torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64))
        signs = (
            {} if self.sign_accuracy is None else {f"{prefix}/sign_accuracy": self.sign_accuracy}
        )
        heads = {f"{prefix}/accuracy_{h}": a for h, a in self.head_accuracy.items()}
        return (
            signs
            | heads
            | {
                f"{prefix}/accuracy": self.accuracy,
                f"{prefix}/loss": self.loss,
                f"{prefix}/margin_mean": float(m.mean()),
                f"{prefix}/margin_std": float(m.std()) if m.numel() > 1 else 0.0,
                f"{prefix}/margin_p25": float(q[0]),
                f"{prefix}/margin_p50": float(q[1]),
                f"{prefix}/margin_p75": float(q[2]),
            }
        )


def _chunks(items: Sequence[PreferencePair], size: int) -> list[Sequence[PreferencePair]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def pair_scores(
    model: TrainableRewardModel, chunk: Sequence[PreferencePair]
) -> tuple[Tensor, Tensor]:
    """Each head's scores (M, K) of the chosen and of the rejected responses, in one forward
    of 2M rows (each pair's prompt media, if any, with both of its responses; media
    responses with their own items, ``PreferencePair.response_media``)."""
    prompts = [p.prompt for p in chunk]
    responses = [p.chosen for p in chunk] + [p.rejected for p in chunk]
    media = [p.response_media(side) for side in ("chosen", "rejected") for p in chunk]
    scores = model.pair_head_scores(prompts + prompts, responses, media)
    return scores[: len(chunk)], scores[len(chunk) :]


def head_verdicts(chunk: Sequence[PreferencePair], heads: Sequence[str]) -> list[list[str]]:
    """Each pair's verdict per head (M lists of K): its ``head_labels``, else ``chosen``."""
    return [[p.head_labels.get(h, "chosen") for h in heads] for p in chunk]


def pair_loss(
    chosen: Tensor,
    rejected: Tensor,
    chunk: Sequence[PreferencePair],
    margin: float,
    loss_type: str = "sigmoid",
    heads: Sequence[str] = ("score",),
) -> Tensor:
    """Per-pair loss (M,) from each head's scores (M, K) (or (M,): one head): the pairwise
    loss ``loss_type`` with each pair's margin plus ``margin``, oriented by the head's
    verdict, or the tie term for a tie, summed over the heads; plus the safety sign terms of
    labeled responses."""
    if chosen.dim() == 1:
        chosen, rejected = chosen.unsqueeze(-1), rejected.unsqueeze(-1)
    device = chosen.device
    pair_fn = PAIR_LOSSES.get(loss_type).fn
    margins = torch.tensor([p.margin + margin for p in chunk], dtype=chosen.dtype, device=device)
    chosen_signs = torch.tensor([p.chosen_sign for p in chunk], device=device)
    rejected_signs = torch.tensor([p.rejected_sign for p in chunk], device=device)
    verdicts = head_verdicts(chunk, heads)
    total = torch.zeros(len(chunk), dtype=chosen.dtype, device=device)
    for k in range(len(heads)):
        flip = torch.tensor([v[k] == "rejected" for v in verdicts], device=device)
        tie = torch.tensor([v[k] == "tie" for v in verdicts], device=device)
        c, r = chosen[:, k], rejected[:, k]
        better, worse = torch.where(flip, r, c), torch.where(flip, c, r)
        ranked = pair_fn(better, worse, margins)
        total = total + torch.where(tie, TIE_WEIGHT * tie_loss(c, r), ranked)
        total = total + safety_sign_loss(c, chosen_signs) + safety_sign_loss(r, rejected_signs)
    return total


def head_hits(
    chosen: Tensor, rejected: Tensor, chunk: Sequence[PreferencePair], heads: Sequence[str]
) -> tuple[Tensor, Tensor]:
    """Per head (K,): how many pairs it ranks as its verdict says, and how many it was asked
    to rank (ties excluded)."""
    verdicts = head_verdicts(chunk, heads)
    hits = torch.zeros(len(heads), dtype=torch.float64)
    asked = torch.zeros(len(heads), dtype=torch.float64)
    for i, row in enumerate(verdicts):
        for k, verdict in enumerate(row):
            if verdict == "tie":
                continue
            gap = float(chosen[i, k] - rejected[i, k])
            hits[k] += float(gap > 0 if verdict == "chosen" else gap < 0)
            asked[k] += 1
    return hits, asked


def evaluate_preferences(
    model: TrainableRewardModel,
    pairs: Sequence[PreferencePair],
    micro_batch_size: int = 8,
    margin: float = 0.0,
    loss_type: str = "sigmoid",
) -> PreferenceEval:
    """Accuracy (r_c > r_r of the combined score), mean loss and margins r_c - r_r of
    ``pairs``; with several heads, each head's accuracy against its verdicts too.

    Runs in eval mode without gradients; the module's mode is restored.
    """
    if not pairs:
        raise ValueError("evaluate needs at least one pair")
    heads = model.head_names
    margins, losses, sign_hits = [], [], []
    hits = torch.zeros(len(heads), dtype=torch.float64)
    asked = torch.zeros(len(heads), dtype=torch.float64)
    with inference(model):
        for chunk in _chunks(pairs, micro_batch_size):
            chosen_k, rejected_k = (s.float().cpu() for s in pair_scores(model, chunk))
            chosen, rejected = model.combined(chosen_k), model.combined(rejected_k)
            margins.append(chosen - rejected)
            losses.append(pair_loss(chosen_k, rejected_k, chunk, margin, loss_type, heads))
            chunk_hits, chunk_asked = head_hits(chosen_k, rejected_k, chunk, heads)
            hits, asked = hits + chunk_hits, asked + chunk_asked
            for pair, c, r in zip(chunk, chosen.tolist(), rejected.tolist(), strict=True):
                for sign, score in ((pair.chosen_sign, c), (pair.rejected_sign, r)):
                    if sign:
                        sign_hits.append(float(sign * score > 0))
    gap = torch.cat(margins)
    per_head = (
        {h: float(hits[k] / asked[k]) for k, h in enumerate(heads) if asked[k]}
        if len(heads) > 1
        else {}
    )
    return PreferenceEval(
        accuracy=float((gap > 0).float().mean()),
        loss=float(torch.cat(losses).mean()),
        margins=gap,
        sign_accuracy=sum(sign_hits) / len(sign_hits) if sign_hits else None,
        head_accuracy=per_head,
    )


def score_moments(
    model: TrainableRewardModel, pairs: Sequence[PreferencePair], micro_batch_size: int = 8
) -> RunningMoments:
    """Mean and variance of the raw scores of every response of ``pairs`` (the normalization
    saved with a trained model)."""
    moments = RunningMoments()
    with inference(model):
        for chunk in _chunks(pairs, micro_batch_size):
            chosen, rejected = (model.combined(s) for s in pair_scores(model, chunk))
            moments = moments.update(torch.cat([chosen, rejected]).double().cpu())
    return moments


class RewardModelTrainer(SeededBatchTrainer):
    """Trains ``model`` with ``strategy`` (already ``prepare``d on ``model.module``)."""

    params: RewardTrainParams
    checkpoint_name = "rm"

    def __init__(
        self,
        model: TrainableRewardModel,
        strategy: Strategy,
        train_pairs: Sequence[PreferencePair],
        params: RewardTrainParams,
        *,
        eval_pairs: Sequence[PreferencePair] = (),
        collective: Collective | None = None,
        checkpoints: CheckpointStore | None = None,
        tracker: Tracker | None = None,
    ) -> None:
        super().__init__(
            strategy,
            train_pairs,
            params,
            eval_items=eval_pairs,
            collective=collective,
            checkpoints=checkpoints,
            tracker=tracker,
            noun="pairs",
        )
        self.model, self.params = model, params
        self.train_pairs, self.eval_pairs = train_pairs, eval_pairs

    def evaluation_metrics(self) -> dict[str, float]:
        return self.evaluate(self.eval_pairs).metrics()

    def train_step(self) -> dict[str, float]:
        """One optimizer step on the next batch; returns its metrics."""
        pairs = self.rank_items()
        self.model.module.train()
        heads = self.model.head_names
        loss_sum = 0.0
        hits = torch.zeros(len(heads), dtype=torch.float64)
        asked = torch.zeros(len(heads), dtype=torch.float64)
        for chunk in _chunks(pairs, self.params.micro_batch_size):
            chosen, rejected = self._pair_scores(chunk)
            losses = pair_loss(
                chosen, rejected, chunk, self.params.margin, self.params.loss_type, heads
            )
            self.strategy.backward(losses.sum() / len(pairs))
            loss_sum += float(losses.detach().sum())
            chunk_hits, chunk_asked = head_hits(chosen.detach(), rejected.detach(), chunk, heads)
            hits, asked = hits + chunk_hits, asked + chunk_asked
        # every rank decides on the global loss, so sharded strategies skip together (a
        # non-finite gradient also makes the strategy skip: its norm is global)
        totals = self.sum_over_ranks([loss_sum, float(len(pairs)), *hits.tolist(), *asked.tolist()])
        loss = totals[0] / totals[1]
        k = len(heads)
        head_hits_all, head_asked_all = totals[2 : 2 + k], totals[2 + k :]
        result = self.strategy.step(skip_reason=None if math.isfinite(loss) else "non-finite loss")
        self.step += 1
        log.debug("rm.step", step=self.step, loss=loss)
        per_head = (
            {
                f"train/accuracy_{h}": head_hits_all[i] / head_asked_all[i]
                for i, h in enumerate(heads)
                if head_asked_all[i]
            }
            if k > 1
            else {}
        )
        asked_all = sum(head_asked_all)
        return per_head | {
            "train/loss": loss,
            "train/accuracy": sum(head_hits_all) / asked_all if asked_all else 0.0,
            "train/grad_norm": result.grad_norm,
            "train/lr": result.lr,
            "train/skipped": float(result.skipped),
        }

    def _pair_scores(self, chunk: Sequence[PreferencePair]) -> tuple[Tensor, Tensor]:
        return pair_scores(self.model, chunk)

    # -- evaluation -------------------------------------------------------------------

    def evaluate(self, pairs: Sequence[PreferencePair]) -> PreferenceEval:
        """Accuracy, loss and margins of ``pairs`` under the current weights (this rank)."""
        return evaluate_preferences(
            self.model,
            pairs,
            self.params.micro_batch_size,
            self.params.margin,
            self.params.loss_type,
        )

    def score_moments(self, pairs: Sequence[PreferencePair]) -> RunningMoments:
        """Moments of the raw scores of every response of ``pairs`` (see :func:`score_moments`)."""
        return score_moments(self.model, pairs, self.params.micro_batch_size)
