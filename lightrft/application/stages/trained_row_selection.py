"""The trained-row selection stage: old log-probs on the trained rows only.

When the loss ratio is the only reader of the old log-probs (no teachers, no high-entropy
selection, no mismatch metrics) and the optimizer leaves the zero-advantage samples out
(``train.skip_zero_advantage_rows`` and a loss that is a multiple of the advantage, the
rule of :mod:`lightrft.application.trained_rows`), the advantages do not depend on the old
log-probs. Then they come first, and the old-policy forward (and the one at the sampling
temperature for the rollout correction) runs only on the samples with a non-zero
advantage: the other rows of ``Experience.old_logprobs`` are 0, unset and never read.
``logprobs/old_forwarded_fraction`` logs the share forwarded. A step with a KL term (a
reference and a coefficient above 0) trains every row, so it forwards every row.
"""

from __future__ import annotations

import torch

from lightrft.application.stages.advantages import Advantages
from lightrft.application.stages.no_grad_forward import NoGradForward
from lightrft.application.stages.records import Annotation
from lightrft.application.trained_rows import rows_with_advantage


class SelectTrainedRows:
    """Computes the advantages (without KL) and narrows ``old_batches`` to the rows with a
    non-zero one; ``with_reference``: the run has a reference, so a step with
    ``kl_coef > 0`` has a KL term and is left as it is."""

    def __init__(
        self, advantages: Advantages, forward: NoGradForward, *, with_reference: bool
    ) -> None:
        self.advantages, self.forward, self.with_reference = advantages, forward, with_reference

    def __call__(self, work: Annotation) -> None:
        """Advantages first, then the old forward's rows."""
        if self.with_reference and work.kl_coef > 0:
            return
        self.advantages.compute(work, work.advantage_inputs(), 0.0)
        assert work.advantages is not None
        trained = rows_with_advantage(work.advantages, work.mask)
        rows = torch.nonzero(trained).flatten()
        work.old_batches = self.forward.batches(work.tensors.sequences, work.group_index, rows)
        fraction = {"logprobs/old_forwarded_fraction": float(trained.float().mean())}
        work.metrics = {**fraction, **work.metrics}  # first, as the forwards' metrics are
