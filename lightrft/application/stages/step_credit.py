"""The step-credit stage (an estimator with ``needs_step_rewards``, e.g. ``process_grpo``):
the process rewards of the reward sources that pass step scores on (``process_rm`` with
``aggregate: steps``) on each step's last response token
(:func:`~lightrft.domain.turn_credit.rewards_at_ends`, the placement turn credit uses)."""

from __future__ import annotations

from lightrft.application.stages.records import Annotation
from lightrft.domain.turn_credit import rewards_at_ends


class StepCredit:
    """Sets ``step_rewards`` and ``step_mask`` (B, R) from the sources' step rewards (summed
    over sources where two end a step on the same token; none: no step, outcome only)."""

    def __call__(self, work: Annotation) -> None:
        """Places every source's step rewards on their tokens."""
        b = work.mask.shape[0]
        ends: list[list[int]] = [[] for _ in range(b)]
        values: list[list[float]] = [[] for _ in range(b)]
        for per_sample in work.collected.rollout.scores.steps.values():
            for row, steps in enumerate(per_sample):
                for end, value in steps:
                    ends[row].append(end)
                    values[row].append(value)
        work.step_rewards, work.step_mask = rewards_at_ends(ends, values, work.mask, what="step")
