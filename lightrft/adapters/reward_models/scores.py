"""A scalar reward model's result from its raw scores, the same for every way of computing
them (HF forward, vLLM pooling): normalized when a normalization is given, with the mean raw
score as a metric. Shape letters: B samples."""

from __future__ import annotations

import torch
from torch import Tensor

from lightrft.adapters.reward_models.card import RewardModelCard, ScoreNormalization
from lightrft.domain.types import RewardResult


def scoring_normalization(
    card: RewardModelCard, normalize: bool, name: str
) -> ScoreNormalization | None:
    """The card's normalization when ``normalize`` (an error when it has none), else None."""
    if normalize and card.normalization is None:
        raise ValueError(f"reward model {name!r}: normalize=True but no normalization saved")
    return card.normalization if normalize else None


def scalar_result(raw: Tensor, normalization: ScoreNormalization | None) -> RewardResult:
    """Scores (B,) = raw, or (raw - mean) / std; metric ``raw_mean``. ``raw``: (B,) float32."""
    scores = raw if normalization is None else (raw - normalization.mean) / normalization.std
    metrics = {"raw_mean": raw.mean() if len(raw) else torch.tensor(0.0)}
    return RewardResult(scores=scores, metrics=metrics)
