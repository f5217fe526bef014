"""The KL stage: the per-token KL(old policy || reference) estimate and its mean
(``kl/mean``), on the steps that forwarded both."""

from __future__ import annotations

from lightrft.application.stages.records import Annotation
from lightrft.domain.kl import kl_estimate


class KLEstimate:
    """Sets ``kl`` (B, R) with ``estimator`` when ``old`` and ``ref`` are known."""

    def __init__(self, estimator: str) -> None:
        self.estimator = estimator

    def __call__(self, work: Annotation) -> None:
        """Estimates the KL of ``work``'s response tokens."""
        if work.ref is None or work.old is None:
            return
        work.kl = kl_estimate(self.estimator, work.old, work.ref, work.mask)
        work.metrics["kl/mean"] = float(work.kl.sum() / work.mask.sum())
