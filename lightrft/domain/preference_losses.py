"""The pairwise losses a scalar reward model trains with, by name (``--loss_type``), and the
term of pairs whose responses are equally good.

Shapes: chosen, rejected (B,) scores of the preferred and the other response; every loss
returns (B,) per pair (take ``.mean()`` for the batch loss).

- ``sigmoid`` (Bradley-Terry): -log sigmoid(c - r - m), with the margin m (Llama 2,
  arXiv:2307.09288, eq. 2); computed as softplus(-(c - r - m)).
- ``logexp``: log(1 + exp(r - c)) (Anthropic's HH paper, arXiv:2204.05862); the margin does
  not apply. Computed as softplus(r - c), which is the same number without the overflow of
  exp(r - c) for large gaps.
- ``hps`` (Human Preference Score, arXiv:2303.14420): cross-entropy of the two scores as
  logits of a two-way choice whose answer is the chosen one, -log(e^c / (e^c + e^r)) =
  logsumexp(c, r) - c; the margin does not apply.

The three agree when m = 0 (a test checks); they differ in what the margin does and in how
the original LightRFT names them (``--loss_type sigmoid|logexp|hps``, with ``--margin``
used by ``sigmoid`` only).

A pair labelled as a tie (both responses equally good on an aspect) adds ``tie_loss``
|a - b|, weighted by :data:`TIE_WEIGHT` (the original's 0.01) in the trainer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor
from torch.nn import functional as F

from lightrft.domain.checks import check_same_shape, check_shape
from lightrft.domain.registry import Registry

TIE_WEIGHT = 0.01
"""Weight of the tie term |a - b| next to the pairwise losses (the original's)."""


class PairLossFn(Protocol):
    def __call__(self, chosen: Tensor, rejected: Tensor, margin: Tensor | float) -> Tensor: ...


def _check(chosen: Tensor, rejected: Tensor, margin: Tensor | float) -> None:
    check_shape("chosen", chosen, (None,))
    check_same_shape("chosen", chosen, rejected=rejected)
    if isinstance(margin, Tensor):
        check_same_shape("chosen", chosen, margin=margin)


def log_sigmoid_loss(chosen: Tensor, rejected: Tensor, margin: Tensor | float = 0.0) -> Tensor:
    """-log sigmoid(chosen - rejected - margin) per pair (B,)."""
    _check(chosen, rejected, margin)
    return F.softplus(-(chosen - rejected - margin))


def log_exp_loss(chosen: Tensor, rejected: Tensor, margin: Tensor | float = 0.0) -> Tensor:
    """log(1 + exp(rejected - chosen)) per pair (B,); ``margin`` is not used."""
    _check(chosen, rejected, margin)
    return F.softplus(rejected - chosen)


def hps_loss(chosen: Tensor, rejected: Tensor, margin: Tensor | float = 0.0) -> Tensor:
    """Cross-entropy of logits (chosen, rejected) with the chosen one as the answer, per pair
    (B,): logsumexp(chosen, rejected) - chosen; ``margin`` is not used."""
    _check(chosen, rejected, margin)
    logits = torch.stack([chosen, rejected], dim=-1)  # [B, 2]
    target = torch.zeros(chosen.shape[0], dtype=torch.long, device=chosen.device)
    return F.cross_entropy(logits, target, reduction="none")


def tie_loss(first: Tensor, second: Tensor) -> Tensor:
    """|first - second| per pair (B,): pulls the scores of equally good responses together."""
    check_shape("first", first, (None,))
    check_same_shape("first", first, second=second)
    return (first - second).abs()


@dataclass(frozen=True)
class PairLoss:
    """A named pairwise loss and whether it reads the margin."""

    fn: PairLossFn
    uses_margin: bool


PAIR_LOSSES: Registry[PairLoss] = Registry("reward-model loss")
PAIR_LOSSES.add("sigmoid", PairLoss(log_sigmoid_loss, uses_margin=True), aliases=("bt",))
PAIR_LOSSES.add("logexp", PairLoss(log_exp_loss, uses_margin=False))
PAIR_LOSSES.add("hps", PairLoss(hps_loss, uses_margin=False))
