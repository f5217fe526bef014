"""Assigning a step's samples to data-parallel ranks so that every rank's cost is even.

Mixed text/image batches vary a lot in cost (an image adds hundreds of patches and
positions); a contiguous split can give one rank all the images. :func:`balanced_assignment`
gives every rank exactly ``len(costs) / world_size`` samples (sharded strategies need equal
micro-batch counts) and spreads the cost greedily: samples in decreasing cost (ties by
index) each go to the least-loaded rank that still has room (ties by rank). The result is
a pure function of ``(costs, world_size)``: deterministic, and the same after a resume.

With every rank's count fixed, the spread (max load - min load) is at most the largest
single cost (tested as a property). Greedy is not optimal: on an already even contiguous
split it can be slightly worse (e.g. costs 1 9 6 | 5 3 8: contiguous 16/16, greedy 17/15),
which is why the cycle logs the imbalance before and after.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Assignment:
    """``ranks[r]``: the sample indices rank r gets (ascending); ``loads[r]`` their cost."""

    ranks: tuple[tuple[int, ...], ...]
    loads: tuple[int, ...]

    @property
    def imbalance(self) -> float:
        """max load / mean load - 1 (0: perfectly even; 0 for an all-zero cost)."""
        return imbalance(self.loads)


def imbalance(loads: Sequence[int]) -> float:
    """max / mean - 1 of per-rank ``loads`` (0 when they sum to 0)."""
    total = sum(loads)
    return 0.0 if total == 0 else max(loads) * len(loads) / total - 1.0


def contiguous_loads(costs: Sequence[int], world_size: int) -> tuple[int, ...]:
    """Per-rank cost of the plain split (rank r takes the r-th contiguous slice)."""
    per_rank = _per_rank(len(costs), world_size)
    return tuple(sum(costs[r * per_rank : (r + 1) * per_rank]) for r in range(world_size))


def balanced_assignment(costs: Sequence[int], world_size: int) -> Assignment:
    """Equal-count, cost-balanced assignment of ``len(costs)`` samples to ``world_size``
    ranks (see the module docstring). ``costs`` are non-negative integers."""
    per_rank = _per_rank(len(costs), world_size)
    if any(c < 0 for c in costs):
        raise ValueError("costs must be non-negative")
    order = sorted(range(len(costs)), key=lambda i: (-costs[i], i))
    members: list[list[int]] = [[] for _ in range(world_size)]
    loads = [0] * world_size
    for i in order:
        rank = min(
            (r for r in range(world_size) if len(members[r]) < per_rank),
            key=lambda r: (loads[r], r),
        )
        members[rank].append(i)
        loads[rank] += costs[i]
    return Assignment(tuple(tuple(sorted(m)) for m in members), tuple(loads))


def _per_rank(samples: int, world_size: int) -> int:
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    if samples % world_size:
        raise ValueError(
            f"{samples} samples cannot be split evenly over {world_size} ranks; every rank "
            "needs the same count"
        )
    return samples // world_size
