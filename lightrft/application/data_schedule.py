"""Which prompts a rank trains on at a given step: a pure function of (seed, step, rank).

The global prompt stream is the concatenation of per-epoch seeded permutations of the
dataset; step s takes the next ``world_size * per_rank`` entries and rank r its slice. So the
data position is the step number, and resuming needs no sampler state.
"""

from __future__ import annotations

import torch


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
