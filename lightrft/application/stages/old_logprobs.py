"""The old-policy stage: the policy's no-grad log-probs of the sampled tokens (and their
entropies for the high-entropy token selection) on ``old_batches``."""

from __future__ import annotations

from lightrft.application.stages.no_grad_forward import NoGradForward
from lightrft.application.stages.records import Annotation
from lightrft.domain.ports import Policy


class OldLogprobs:
    """Sets ``old`` (and ``entropy`` when ``with_entropy``).

    ``always``: some reader needs them every step (several optimizer steps per batch, a
    teacher, the entropy selection, the rollout correction); otherwise they are read only
    by the KL in the reward, so they run on the steps with a KL coefficient above 0.
    """

    def __init__(
        self, policy: Policy, forward: NoGradForward, *, always: bool, with_entropy: bool
    ) -> None:
        self.policy, self.forward = policy, forward
        self.always, self.with_entropy = always, with_entropy

    def __call__(self, work: Annotation) -> None:
        """Forwards the policy on ``work.old_batches``."""
        if not (self.always or work.kl_coef > 0):
            return
        work.old, work.entropy = self.forward.logprobs(
            self.policy, work.tensors.sequences, work.old_batches, self.with_entropy
        )
