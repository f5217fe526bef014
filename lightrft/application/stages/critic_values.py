"""The value stage: the critic's no-grad values of every response token (GAE's input and
the value loss's old values)."""

from __future__ import annotations

from lightrft.application.stages.no_grad_forward import NoGradForward
from lightrft.application.stages.records import Annotation
from lightrft.domain.ports import Critic


class CriticValues:
    """Sets ``values`` (B, R)."""

    def __init__(self, critic: Critic, forward: NoGradForward) -> None:
        self.critic, self.forward = critic, forward

    def __call__(self, work: Annotation) -> None:
        """Forwards the critic on every row."""
        work.values = self.forward.values(self.critic, work.tensors.sequences, work.batches)
