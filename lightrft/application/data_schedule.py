"""Which prompts a rank trains on at a given step: a pure function of (seed, step, rank).

The global prompt stream is the concatenation of per-epoch seeded permutations of the
dataset; step s takes the next ``world_size * per_rank`` entries and rank r its slice. So the
data position is the step number, and resuming needs no sampler state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from lightrft.domain.balanced_assignment import balanced_assignment, contiguous_loads, imbalance


def epoch_permutation(num_prompts: int, epoch: int, seed: int) -> list[int]:
    """The order of the dataset in ``epoch``."""
    gen = torch.Generator().manual_seed(seed * 7_919 + epoch)
    return torch.randperm(num_prompts, generator=gen).tolist()


def prompt_indices(
    step: int,
    *,
    per_rank: int,
    rank: int,
    world_size: int,
    num_prompts: int,
    seed: int,
    shuffle: bool = True,
) -> list[int]:
    """Dataset indices for ``rank`` at ``step`` (0-based); ``shuffle=False`` keeps the
    dataset's order in every epoch."""
    if num_prompts <= 0:
        raise ValueError("the prompt dataset is empty")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is outside world_size {world_size}")
    start = step * world_size * per_rank + rank * per_rank
    indices: list[int] = []
    cache: dict[int, list[int]] = {}
    for position in range(start, start + per_rank):
        epoch, offset = divmod(position, num_prompts)
        if epoch not in cache:
            cache[epoch] = (
                epoch_permutation(num_prompts, epoch, seed) if shuffle else list(range(num_prompts))
            )
        indices.append(cache[epoch][offset])
    return indices


def balanced_prompt_indices(
    step: int, *, rank: int, cost: Callable[[int], int], **schedule: Any
) -> tuple[list[int], dict[str, float]]:
    """Dataset indices for ``rank`` at ``step`` when the step's prompts (the same set as
    :func:`prompt_indices` over all ranks; ``schedule`` is its other keywords) are spread by
    ``cost(index)``; every rank gets ``per_rank`` of them. Also returns
    ``balance/imbalance_before`` (contiguous slices) and ``balance/imbalance_after`` (max /
    mean rank cost - 1). A pure function of its inputs."""
    world_size = int(schedule["world_size"])
    step_prompts = [
        index for r in range(world_size) for index in prompt_indices(step, rank=r, **schedule)
    ]
    costs = [cost(index) for index in step_prompts]
    assignment = balanced_assignment(costs, world_size)
    metrics = {
        "balance/imbalance_before": imbalance(contiguous_loads(costs, world_size)),
        "balance/imbalance_after": assignment.imbalance,
    }
    return [step_prompts[i] for i in assignment.ranks[rank]], metrics
