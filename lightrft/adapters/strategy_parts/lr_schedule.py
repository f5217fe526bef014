"""Learning-rate schedule shared by the training strategies: warmup, then a decay.

The multiplier of the base learning rate at optimizer step s (0-based: the s-th applied
step uses f(s); skipped steps do not advance s), with W = ``warmup_steps``,
S = ``total_steps`` and r = ``min_lr_ratio``:

- warmup, s < W: f(s) = (s + 1) / W (the first step already moves the weights and step
  W - 1 reaches the full rate);
- afterwards, with progress p = min(1, (s - W) / max(1, S - W)):
  constant f = 1; linear f = r + (1 - r) (1 - p); cosine f = r + (1 - r) (1 + cos(pi p)) / 2.

A strategy's ``set_lr_scale(c)`` multiplies every later rate by c (the training-health
rollback lowers the rate this way); :func:`checked_lr_scale` validates c.
"""

from __future__ import annotations

import math

from lightrft.domain.types import OptimizerParams


def lr_multiplier(step: int, optim: OptimizerParams) -> float:
    """f(step), the factor applied to ``optim.lr`` at optimizer step ``step`` (see above)."""
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    warmup = optim.warmup_steps
    if step < warmup:
        return (step + 1) / warmup
    if optim.schedule == "constant" or optim.total_steps is None:
        return 1.0
    progress = min(1.0, (step - warmup) / max(1, optim.total_steps - warmup))
    floor = optim.min_lr_ratio
    if optim.schedule == "cosine":
        return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))
    return floor + (1.0 - floor) * (1.0 - progress)


def learning_rate(step: int, optim: OptimizerParams) -> float:
    """The learning rate of optimizer step ``step``: ``optim.lr * lr_multiplier(step)``."""
    return optim.lr * lr_multiplier(step, optim)


def checked_lr_scale(scale: float) -> float:
    """``scale`` as a float, if it is a usable learning-rate multiplier (finite, > 0)."""
    value = float(scale)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"lr scale must be a finite number > 0, got {scale}")
    return value
