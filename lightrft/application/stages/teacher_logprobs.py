"""The teacher stage (on-policy distillation): each teacher's no-grad log-probs of the
student's sampled tokens."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from lightrft.application.stages.no_grad_forward import NoGradForward
from lightrft.application.stages.records import Annotation
from lightrft.domain.ports import ReferenceModel


class TeacherLogprobs:
    """Sets ``teacher`` (K, B, R), the teachers in order."""

    def __init__(self, teachers: Sequence[ReferenceModel], forward: NoGradForward) -> None:
        self.teachers, self.forward = list(teachers), forward

    def __call__(self, work: Annotation) -> None:
        """Forwards every teacher on every row."""
        seq = work.tensors.sequences
        work.teacher = torch.stack(
            [self.forward.logprobs(t, seq, work.batches, False)[0] for t in self.teachers]
        )
