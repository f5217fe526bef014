from __future__ import annotations

import pytest
import torch

from lightrft.adapters.fakes.collective import FakeCollective
from lightrft.application.batching import (
    build_rollout_tensors,
    split_by_count,
    split_by_token_budget,
)
from lightrft.application.data_schedule import epoch_permutation, prompt_indices
from lightrft.application.evaluator import pass_at_k
from lightrft.domain.types import Completion, PromptRecord


def _prompt(uid: str, ids: tuple[int, ...]) -> PromptRecord:
    return PromptRecord(uid=uid, prompt_text=uid, prompt_token_ids=ids)


def test_rollout_tensors_layout() -> None:
    prompts = [_prompt("a", (5, 6, 7)), _prompt("b", (8,))]
    completions = [
        Completion(0, (9, 1), "x", "stop", (-0.5, -0.25)),
        Completion(1, (10, 11, 12), "y", "length", (-1.0, -2.0, -3.0)),
    ]
    out = build_rollout_tensors(prompts, completions, pad_token_id=0)
    # P = 3 (longest prompt), R = 3 (longest response): prompts left-padded, responses right.
    assert out.sequences.input_ids.tolist() == [[5, 6, 7, 9, 1, 0], [0, 0, 8, 10, 11, 12]]
    assert out.sequences.attention_mask.tolist() == [[1, 1, 1, 1, 1, 0], [0, 0, 1, 1, 1, 1]]
    assert out.sequences.response_mask.tolist() == [[1, 1, 0], [1, 1, 1]]
    assert out.rollout_logprobs is not None
    assert out.rollout_logprobs.tolist() == [[-0.5, -0.25, 0.0], [-1.0, -2.0, -3.0]]
    assert out.response_lengths.tolist() == [2, 3]


def test_rollout_tensors_refuse_empty_completion() -> None:
    with pytest.raises(ValueError, match="completion 0 has no tokens"):
        build_rollout_tensors([_prompt("a", (1,))], [Completion(0, (), "", "stop")], 0)


def test_split_by_token_budget_balances_within_the_budget() -> None:
    indices = torch.tensor([4, 2, 7, 1, 3])
    tokens = torch.tensor([3, 3, 5, 1, 9])
    chunks = split_by_token_budget(indices, tokens, 6, FakeCollective())
    # 21 tokens / 6 -> 4 bins; largest first into the least-loaded bin: 9 -> b0, 5 -> b1,
    # 3 (pos 0) -> b2, 3 (pos 1) -> b3, 1 (pos 3) -> b2 (tie 3 = 3, lower bin); loads
    # 9 (alone, over the budget), 5, 4, 3. Bins by first position: {0, 3}, {1}, {2}, {4}.
    assert [c.tolist() for c in chunks] == [[4, 1], [2], [7], [3]]
    assert [c.tolist() for c in split_by_count(indices, 2)] == [[4, 2], [7, 1], [3]]


def test_prompt_indices_cover_each_epoch_once_across_ranks() -> None:
    n, per_rank, world = 10, 2, 2  # 4 prompts per step; 10 prompts -> epoch boundary mid-step
    seen = []
    for step in range(5):  # 20 positions = exactly two epochs
        for rank in range(world):
            seen += prompt_indices(
                step, per_rank=per_rank, rank=rank, world_size=world, num_prompts=n, seed=3
            )
    assert sorted(seen[:10]) == list(range(10)) and sorted(seen[10:]) == list(range(10))
    assert seen[:10] == epoch_permutation(10, 0, 3)
    assert seen[:10] != seen[10:]  # each epoch is reshuffled


def test_pass_at_k_hand_computed() -> None:
    # n = 4 samples, c = 1 correct: pass@1 = 1/4; pass@2 = 1 - C(3,2)/C(4,2) = 1 - 3/6 = 0.5
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)
    assert pass_at_k(4, 0, 4) == 0.0
    assert pass_at_k(4, 3, 2) == 1.0  # n - c = 1 < k
    with pytest.raises(ValueError, match="k must be in"):
        pass_at_k(4, 1, 5)


def test_trim_padding_drops_the_columns_no_row_attends() -> None:
    from lightrft.adapters.fakes.batches import make_sequence_batch
    from lightrft.application.batching import trim_padding

    # prompts of 3 and 1 tokens, responses of 2 and 1 tokens, padded to P = 5, R = 4
    batch = make_sequence_batch(
        [[5, 6, 7], [8]], [[9, 10], [11]], prompt_padding=2, response_padding=2
    )
    assert batch.input_ids.shape == (2, 9)
    got = trim_padding(batch)
    # the two leading all-padding prompt columns and the two trailing response columns go
    assert got.input_ids.tolist() == [[5, 6, 7, 9, 10], [0, 0, 8, 11, 0]]
    assert got.attention_mask.tolist() == [[1, 1, 1, 1, 1], [0, 0, 1, 1, 0]]
    assert got.response_mask.tolist() == [[1, 1], [1, 0]]
    assert torch.equal(trim_padding(got).input_ids, got.input_ids)  # nothing left to trim
