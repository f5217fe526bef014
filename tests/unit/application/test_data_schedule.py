"""Which prompts a rank takes at a step: seeded epochs, or the file order."""

from __future__ import annotations

from lightrft.application.data_schedule import prompt_indices


def test_unshuffled_schedule_walks_the_file_in_order_across_epochs() -> None:
    # 5 prompts, 2 ranks x 2 per step: step 1 covers global positions 4..7 = 4, 0, 1, 2
    assert prompt_indices(
        1, per_rank=2, rank=0, world_size=2, num_prompts=5, seed=3, shuffle=False
    ) == [4, 0]
    assert prompt_indices(
        1, per_rank=2, rank=1, world_size=2, num_prompts=5, seed=3, shuffle=False
    ) == [1, 2]


def test_shuffled_schedule_is_a_permutation_per_epoch() -> None:
    first_epoch = [
        i
        for step in range(5)
        for i in prompt_indices(step, per_rank=1, rank=0, world_size=1, num_prompts=5, seed=3)
    ]
    assert sorted(first_epoch) == [0, 1, 2, 3, 4]
    assert first_epoch != [0, 1, 2, 3, 4]  # seed 3 does not give the identity
