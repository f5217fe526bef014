"""Cost-balanced prompt schedule over simulated data-parallel ranks."""

from __future__ import annotations

import pytest

from lightrft.application.data_schedule import balanced_prompt_indices, prompt_indices

SCHEDULE = {"per_rank": 4, "world_size": 3, "num_prompts": 20, "seed": 5}


def cost(index: int) -> int:
    return 800 if index % 4 == 0 else 30  # every fourth prompt carries an image


@pytest.mark.parametrize("step", [0, 3, 7])
def test_ranks_split_the_same_prompts_evenly(step: int) -> None:
    plain = [prompt_indices(step, rank=r, **SCHEDULE) for r in range(3)]
    runs = [balanced_prompt_indices(step, rank=r, **SCHEDULE, cost=cost) for r in range(3)]
    balanced = [indices for indices, _ in runs]
    # the step trains on the same prompts (a multiset: epochs may wrap), 4 per rank
    assert sorted(i for part in balanced for i in part) == sorted(i for p in plain for i in p)
    assert all(len(part) == 4 for part in balanced)
    loads = [sum(cost(i) for i in part) for part in balanced]
    assert max(loads) - min(loads) <= 800  # spread bounded by the largest cost
    metrics = runs[0][1]
    assert all(m == metrics for _, m in runs)  # every rank computes the same figures
    plain_loads = [sum(cost(i) for i in part) for part in plain]
    mean = sum(plain_loads) / 3
    assert metrics["balance/imbalance_before"] == pytest.approx(max(plain_loads) / mean - 1)
    assert metrics["balance/imbalance_after"] == pytest.approx(max(loads) / mean - 1)
    # resuming at this step recomputes exactly the same split
    assert balanced_prompt_indices(step, rank=1, **SCHEDULE, cost=cost)[0] == balanced[1]
