"""The rollout-correction stage: how far the engine's log-probs are from the trainer's
(``rollout.measure_mismatch``: the ``rollout_mismatch/*`` metrics) and, for the truncated
importance weight (``loss.tis_cap``), the engine's log-probs shifted to the loss's
temperature.

The engine's log-probs are those of the distribution it sampled from (temperature T;
greedy decoding reports temperature-1 ones), so the trainer's are taken at T too: ``old``
itself when the loss's temperature is T, else one more no-grad forward. The loss weighs by
exp(old - rollout) with old at the loss's temperature; the shifted log-probs
old - trainer_T + engine_T make that difference the mismatch at T.
"""

from __future__ import annotations

from torch import Tensor

from lightrft.application.stages.no_grad_forward import NoGradForward
from lightrft.application.stages.records import Annotation
from lightrft.domain.ports import Policy
from lightrft.domain.rollout_correction import mismatch_metrics


class RolloutCorrection:
    """Adds the mismatch metrics (``measure``) and shifts ``rollout_logprobs``
    (``correct``); nothing when the engine gave no log-probs."""

    def __init__(
        self,
        policy: Policy,
        forward: NoGradForward,
        sampling_temperature: float,
        *,
        measure: bool,
        correct: bool,
    ) -> None:
        self.policy, self.forward, self.temperature = policy, forward, sampling_temperature
        self.measure, self.correct = measure, correct

    def __call__(self, work: Annotation) -> None:
        """Compares (and shifts) the engine's log-probs of ``work``."""
        engine = work.rollout_logprobs
        if engine is None:
            return
        trainer = self._sampling_logprobs(work)
        if self.measure:
            mismatch = mismatch_metrics(trainer, engine, work.mask)
            work.metrics.update({k: float(v) for k, v in mismatch.items()})
        old = work.old
        if self.correct and old is not None and trainer is not old:
            work.rollout_logprobs = (old - trainer + engine) * work.mask

    def _sampling_logprobs(self, work: Annotation) -> Tensor:
        """The trainer's log-probs (B, R) at the sampling temperature on ``old_batches``."""
        if work.old is not None and self.temperature == self.forward.temperature:
            return work.old
        seq = work.tensors.sequences
        logprobs, _ = self.forward.logprobs(
            self.policy, seq, work.old_batches, False, self.temperature
        )
        return logprobs
