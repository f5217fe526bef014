"""The high-entropy token selection stage (``algorithm.high_entropy_fraction``): only the
tokens with the highest old-policy entropy keep their advantage."""

from __future__ import annotations

from lightrft.application.stages.records import Annotation
from lightrft.domain.sampling import high_entropy_token_mask


class HighEntropyTokens:
    """Zeroes the advantages of all but the top ``fraction`` of tokens by entropy."""

    def __init__(self, fraction: float) -> None:
        self.fraction = fraction

    def __call__(self, work: Annotation) -> None:
        """Masks ``work.advantages``; adds ``high_entropy/kept_fraction``."""
        if work.entropy is None:
            return
        assert work.advantages is not None, "the advantage stage runs first"
        keep = high_entropy_token_mask(work.entropy, work.mask, self.fraction)
        work.advantages = work.advantages * keep
        work.metrics["high_entropy/kept_fraction"] = float(keep.sum() / work.mask.sum())
