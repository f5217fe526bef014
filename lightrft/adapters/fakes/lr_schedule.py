"""Learning-rate multiplier of optimizer step ``s`` (0-based) for :class:`OptimizerParams`.

Warmup: factor (s + 1) / warmup_steps for s < warmup_steps, so the first step already
moves and step ``warmup_steps - 1`` reaches the full rate. Afterwards, with progress
q = (s - warmup_steps) / max(1, total_steps - warmup_steps) clipped to [0, 1] and
m = ``min_lr_ratio``: constant 1; linear m + (1 - m)(1 - q);
cosine m + (1 - m)(1 + cos(pi q)) / 2.
"""

from __future__ import annotations

import math

from lightrft.domain.types import OptimizerParams


def lr_factor(step: int, params: OptimizerParams) -> float:
    """Multiplier of ``params.lr`` for optimizer step ``step`` (0-based)."""
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    if step < params.warmup_steps:
        return (step + 1) / params.warmup_steps
    if params.schedule == "constant" or params.total_steps is None:
        return 1.0
    span = max(1, params.total_steps - params.warmup_steps)
    progress = min(1.0, (step - params.warmup_steps) / span)
    floor = params.min_lr_ratio
    if params.schedule == "linear":
        return floor + (1.0 - floor) * (1.0 - progress)
    return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))
