"""The check of on-policy distillation's teacher weights (torch-free)."""

from __future__ import annotations

from collections.abc import Sequence


def check_teacher_weights(weights: Sequence[float]) -> None:
    """Raises ValueError unless ``weights`` is non-empty, every weight positive, summing
    to 1 (within 1e-6): normalize them where they are read from a config."""
    if not weights:
        raise ValueError("teacher_weights is empty; on-policy distillation needs a teacher")
    if any(not w > 0 for w in weights):
        raise ValueError(f"teacher_weights must all be > 0, got {list(weights)}")
    if abs(sum(weights) - 1.0) > 1e-6:
        raise ValueError(f"teacher_weights must sum to 1, got {list(weights)} (sum {sum(weights)})")
