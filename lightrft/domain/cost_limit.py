"""One cost constraint of a reward source (torch-free; the dual ascent is in
:mod:`lightrft.domain.constraints`)."""

from __future__ import annotations

from dataclasses import dataclass

from lightrft.domain.scalar_checks import check_non_negative, check_positive


@dataclass(frozen=True)
class CostLimit:
    """One constraint on the reward source ``name``: its cost must average at most ``limit``;
    ``multiplier_lr`` is the dual-ascent step eta, ``init`` the starting multiplier (>= 0).

    The cost of a sample is the source's score, or with ``as_violation`` the indicator
    score > ``violation_threshold`` (then ``limit`` bounds the violation rate).
    """

    name: str
    limit: float
    multiplier_lr: float
    init: float = 0.0
    as_violation: bool = False
    violation_threshold: float = 0.0

    def __post_init__(self) -> None:
        check_positive("multiplier_lr", self.multiplier_lr)
        check_non_negative("init", self.init)
