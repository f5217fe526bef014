"""The optimizer and learning-rate schedule settings (torch-free)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lightrft.domain.scalar_checks import check_non_negative, check_positive


@dataclass(frozen=True)
class OptimizerParams:
    """AdamW and learning-rate schedule settings, shared by every training strategy."""

    lr: float = 1e-6
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    max_grad_norm: float | None = 1.0
    warmup_steps: int = 0
    total_steps: int | None = None
    schedule: Literal["constant", "cosine", "linear"] = "constant"
    min_lr_ratio: float = 0.0

    def __post_init__(self) -> None:
        check_positive("lr", self.lr)
        check_non_negative("weight_decay", self.weight_decay)
        check_non_negative("warmup_steps", self.warmup_steps)
        if self.max_grad_norm is not None:
            check_positive("max_grad_norm", self.max_grad_norm)
        if self.schedule != "constant" and self.total_steps is None:
            raise ValueError(f"schedule {self.schedule!r} needs total_steps")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError(f"min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")
