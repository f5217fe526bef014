"""When failing reward sources stop a run (torch-free; the counting is in
:mod:`lightrft.application.reward_failures`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RewardFailurePolicy:
    """Stop when a source's failure rate is >= ``threshold`` for ``patience`` steps in a row.

    ``enabled=False`` keeps training on fallback scores however many samples fail.
    """

    enabled: bool = True
    threshold: float = 0.9
    patience: int = 3

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold}")
        if self.patience < 1:
            raise ValueError(f"patience must be >= 1, got {self.patience}")
