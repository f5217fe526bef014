"""Bounded staleness of off-policy rollouts: which batch may be generated when, and how old
a batch is when it is trained on.

Notation: the batch of step j is trained on at step j. The trainer has *reached* step k when
it asked for batch k. A producer may start batch j once the trainer has reached step
j - S (S = ``max_staleness``), generating with the newest policy version published then;
that version is at most S optimizer updates older than the policy that trains on the batch
(fewer when updates were skipped). S = 0 is the synchronous cycle: batch j is generated
with the policy that then trains on it.

The policy version counts optimizer updates (and rollbacks) of the trained policy;
``staleness = version at training - version at generation``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def may_start(step: int, reached_step: int, max_staleness: int) -> bool:
    """Whether the batch of ``step`` may be generated once the trainer reached ``reached_step``."""
    if max_staleness < 0:
        raise ValueError(f"max_staleness must be >= 0, got {max_staleness}")
    return reached_step >= step - max_staleness


def steps_to_produce(reached_step: int, max_staleness: int, last_step: int) -> range:
    """The batches that may exist once the trainer reached ``reached_step``: steps
    ``reached_step .. min(reached_step + S, last_step)`` (``last_step`` inclusive)."""
    if max_staleness < 0:
        raise ValueError(f"max_staleness must be >= 0, got {max_staleness}")
    return range(reached_step, min(reached_step + max_staleness, last_step) + 1)


def staleness(trained_version: int, generated_version: int) -> int:
    """Policy versions between the batch's generation and its training (>= 0)."""
    lag = trained_version - generated_version
    if lag < 0:
        raise ValueError(
            f"a batch generated with version {generated_version} cannot be trained by the "
            f"older version {trained_version}"
        )
    return lag


def staleness_metrics(lags: Sequence[int]) -> dict[str, Tensor]:
    """``async/staleness_{mean,max}`` over the batches trained on (detached 0-dim tensors)."""
    if not lags:
        return {}
    values = torch.tensor(list(lags), dtype=torch.float64)
    return {"async/staleness_mean": values.mean(), "async/staleness_max": values.max()}
