"""``alike_group_fraction``: the share of groups (of two or more samples) whose rewards are
all equal, by hand."""

from __future__ import annotations

import pytest
import torch

from lightrft.domain.groups import alike_group_fraction


def test_alike_group_fraction_counts_groups_of_equal_rewards_by_hand() -> None:
    # groups 7: [1, 1, 1] alike; 3: [0, 1] differ; 5: [0, 0] alike; 9: [0.5] a singleton
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.5, 1.0])
    groups = torch.tensor([7, 3, 7, 5, 3, 5, 9, 7])
    fraction = alike_group_fraction(rewards, groups)
    assert fraction is not None and float(fraction) == pytest.approx(2 / 3)


def test_alike_group_fraction_is_none_when_every_group_has_one_sample() -> None:
    assert alike_group_fraction(torch.tensor([0.0, 1.0]), torch.tensor([0, 1])) is None
