"""Token-budget micro-batches: a balanced, deterministic partition of samples by length.

A micro-batch of samples whose lengths (attended tokens) sum to at most ``budget`` bounds the
memory of one forward/backward by the work it holds rather than by a sample count. The
partition is:

1. *Units.* With ``groups`` (the prompt of each sample), the samples of one group form one
   unit, so a policy that runs each distinct prompt once (prefix sharing) can share it; a
   group over the budget is cut, in order, into consecutive runs that fit (a sample over the
   budget on its own becomes a unit alone). Without ``groups`` every sample is a unit.
2. *Bins.* ``k`` starts at ``ceil(total / budget)`` (at most one bin per unit); units are placed largest first (ties:
   earlier unit first) into the least-loaded bin (ties: lower bin) -- the LPT rule, which
   keeps the bin loads within 4/3 of the best possible maximum (ties go to the bin with
   fewer units, then the lower bin, so even zero-length units spread). When a bin holding more than
   one unit ends over the budget, ``k`` grows by one and the placement is redone; with one
   unit per bin nothing can be over, so it stops.
3. *Order.* Each bin lists its samples in increasing index (so a bin keeps groups that were
   contiguous in the input contiguous); bins are ordered by their first sample; empty bins
   (only when a caller asks for more bins than units) come last.

Everything is a pure function of the lengths, groups and budget: every rank computes the
same partition from the same data, and the result never depends on timing.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TokenBudgetPlan:
    """Micro-batches as sample indices, and the samples that alone exceed the budget.

    ``batches``: one tuple of sample indices per micro-batch (empty tuples only at the end);
    ``oversized``: samples longer than the budget (each sits alone in its micro-batch).
    """

    batches: tuple[tuple[int, ...], ...]
    oversized: tuple[int, ...]

    @property
    def count(self) -> int:
        """The number of micro-batches, empty ones included."""
        return len(self.batches)

    def loads(self, lengths: Sequence[int]) -> list[int]:
        """Tokens in each micro-batch."""
        return [sum(lengths[i] for i in batch) for batch in self.batches]


def plan_token_budget(
    lengths: Sequence[int],
    budget: int,
    *,
    groups: Sequence[int] | None = None,
    count: int | None = None,
) -> TokenBudgetPlan:
    """Partitions samples of ``lengths`` (N,) into micro-batches of at most ``budget`` tokens.

    ``groups`` (N,), optional: the group (prompt) of each sample; a group stays in one
    micro-batch when it fits. ``count``: the number of micro-batches to produce (at least
    what the budget needs; used to agree on one count across ranks). When the samples
    cannot be spread over exactly ``count`` bins within the budget, the smallest partition
    is padded with empty micro-batches instead. Raises ``ValueError`` on bad input.
    """
    _check(lengths, budget, groups, count)
    units = _units(lengths, budget, groups)
    oversized = tuple(i for i, n in enumerate(lengths) if n > budget)
    costs = [sum(lengths[i] for i in unit) for unit in units]
    k = max(1, min(math.ceil(sum(costs) / budget), len(units)))
    while True:
        bins = _place(units, costs, k)
        if _within_budget(bins, costs, budget):
            break
        k += 1
    if count is not None and count > len(bins):
        spread = _place(units, costs, count)
        if _within_budget(spread, costs, budget):
            bins = spread
        else:
            bins = bins + [[] for _ in range(count - len(bins))]
    return TokenBudgetPlan(_ordered(bins, units), oversized)


def _check(
    lengths: Sequence[int], budget: int, groups: Sequence[int] | None, count: int | None
) -> None:
    if budget < 1:
        raise ValueError(f"the token budget must be >= 1, got {budget}")
    bad = [i for i, n in enumerate(lengths) if n < 0]
    if bad:
        raise ValueError(f"sample lengths must be >= 0; sample {bad[0]} has {lengths[bad[0]]}")
    if groups is not None and len(groups) != len(lengths):
        raise ValueError(f"groups has {len(groups)} entries, lengths {len(lengths)}")
    if count is not None and count < 1:
        raise ValueError(f"count must be >= 1, got {count}")


def _units(lengths: Sequence[int], budget: int, groups: Sequence[int] | None) -> list[list[int]]:
    """Indices of each unit: whole groups (cut in order when over the budget) or samples."""
    if groups is None:
        return [[i] for i in range(len(lengths))]
    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    units: list[list[int]] = []
    for indices in members.values():  # groups in order of first appearance
        run: list[int] = []
        used = 0
        for i in indices:
            if run and used + lengths[i] > budget:
                units.append(run)
                run, used = [], 0
            run.append(i)
            used += lengths[i]
        units.append(run)
    return units


def _place(units: list[list[int]], costs: list[int], k: int) -> list[list[int]]:
    """LPT: unit numbers per bin; largest unit first into the least-loaded bin."""
    bins: list[list[int]] = [[] for _ in range(k)]
    heap = [(0, 0, b) for b in range(k)]  # (load, units, bin): ties to fewer units, lower bin
    for u in sorted(range(len(units)), key=lambda u: (-costs[u], u)):
        load, count, b = heapq.heappop(heap)
        bins[b].append(u)
        heapq.heappush(heap, (load + costs[u], count + 1, b))
    return bins


def _within_budget(bins: list[list[int]], costs: list[int], budget: int) -> bool:
    """Every bin fits the budget, or holds one unit only (a sample alone over it)."""
    return all(len(b) <= 1 or sum(costs[u] for u in b) <= budget for b in bins)


def _ordered(bins: list[list[int]], units: list[list[int]]) -> tuple[tuple[int, ...], ...]:
    filled = [tuple(sorted(i for u in b for i in units[u])) for b in bins]
    nonempty = sorted((b for b in filled if b), key=lambda b: b[0])
    return tuple(nonempty) + tuple(() for b in filled if not b)
