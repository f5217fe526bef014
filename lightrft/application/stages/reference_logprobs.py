"""The reference stage: the reference model's no-grad log-probs, on the steps whose KL
coefficient is above 0 (the KL term reads them)."""

from __future__ import annotations

from lightrft.application.stages.no_grad_forward import NoGradForward
from lightrft.application.stages.records import Annotation
from lightrft.domain.ports import ReferenceModel


class ReferenceLogprobs:
    """Sets ``ref`` (B, R) when ``work.kl_coef > 0``."""

    def __init__(self, reference: ReferenceModel, forward: NoGradForward) -> None:
        self.reference, self.forward = reference, forward

    def __call__(self, work: Annotation) -> None:
        """Forwards the reference on every row."""
        if work.kl_coef > 0:
            work.ref, _ = self.forward.logprobs(
                self.reference, work.tensors.sequences, work.batches, False
            )
