"""Preference learning for reward models: the Bradley-Terry loss, preference accuracy, and
where a sequence's score is read.

Shapes: B preference pairs (or B sequences), T tokens.

Bradley-Terry models P(chosen > rejected) = sigmoid(r_c - r_r). Training minimizes the
negative log-likelihood -log sigmoid(r_c - r_r - m) with an optional margin m >= 0 that asks
for a gap of at least m (Llama 2, arXiv:2307.09288, eq. 2). ``softplus(-x)`` is the stable
form of ``-log sigmoid(x)``.

A cost model (Safe RLHF, Dai et al. 2023, arXiv:2310.12773) is the same scalar model
trained with ``chosen`` the *more harmful* response and, per response, a safety sign s = +1
(unsafe) or -1 (safe): loss -log sigmoid(c_w - c_l) - log sigmoid(s_w c_w) - log sigmoid(s_l
c_l), so that besides ranking harm, c > 0 reads as unsafe and c < 0 as safe
(:func:`safety_sign_loss`; an unlabeled response, s = 0, adds nothing).
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

from lightrft.domain.checks import check_mask, check_same_shape, check_shape


def bradley_terry_loss(chosen: Tensor, rejected: Tensor, margin: Tensor | float = 0.0) -> Tensor:
    """Per-pair loss -log sigmoid(chosen - rejected - margin).

    Shape: chosen, rejected (B,), margin (B,) or a float -> (B,). Take ``.mean()`` for the
    batch loss. Gradients: d/d chosen = -sigmoid(-(c - r - m)), d/d rejected = the opposite.
    """
    check_shape("chosen", chosen, (None,))
    check_same_shape("chosen", chosen, rejected=rejected)
    if isinstance(margin, Tensor):
        check_same_shape("chosen", chosen, margin=margin)
    return F.softplus(-(chosen - rejected - margin))


def safety_sign_loss(scores: Tensor, signs: Tensor) -> Tensor:
    """Per-response Safe RLHF sign term -log sigmoid(s * c); 0 where s = 0 (unlabeled).

    Shape: scores, signs (B,) -> (B,). ``signs`` holds +1 (unsafe), -1 (safe) or 0.
    """
    check_shape("scores", scores, (None,))
    check_same_shape("scores", scores, signs=signs)
    signs = signs.to(scores.dtype)
    return torch.where(signs != 0, F.softplus(-signs * scores), torch.zeros_like(scores))


def preference_accuracy(chosen: Tensor, rejected: Tensor) -> float:
    """Fraction of pairs with chosen > rejected (ties count as wrong).

    Shape: chosen, rejected (B,), B >= 1.
    """
    check_shape("chosen", chosen, (None,))
    check_same_shape("chosen", chosen, rejected=rejected)
    if chosen.numel() == 0:
        raise ValueError("preference_accuracy needs at least one pair")
    return float((chosen > rejected).float().mean())


def last_token_index(attention_mask: Tensor) -> Tensor:
    """Column of the last attended token of each row, for left or right padding.

    Shape: attention_mask (B, T) -> (B,) long. Every row must attend to some token.
    """
    check_shape("attention_mask", attention_mask, (None, None))
    check_mask("attention_mask", attention_mask)
    attended = attention_mask.bool()
    if not bool(attended.any(dim=1).all()):
        raise ValueError("attention_mask has a row with no attended token")
    columns = torch.arange(attention_mask.shape[1], device=attention_mask.device)
    return torch.where(attended, columns, -1).amax(dim=1)
