"""Per-token policy versions of partial rollouts and the staleness metrics over tokens."""

from __future__ import annotations

import pytest
import torch

from lightrft.domain.partial_rollout import ChunkProgress, token_staleness_metrics, token_versions
from lightrft.domain.types import Completion


def test_versions_follow_the_chunks_that_generated_each_token() -> None:
    chunks = [
        (3, ChunkProgress((2, 1, 2), False)),  # row 1 stopped after one token
        (4, ChunkProgress((1, 0, 2), False)),
        (4, ChunkProgress((0, 0, 1), True)),
    ]
    assert token_versions(chunks, 3) == [(3, 3, 4), (3,), (3, 3, 4, 4, 4)]


def test_a_chunk_with_another_row_count_is_refused() -> None:
    with pytest.raises(ValueError, match="2 rows, the generation has 3"):
        token_versions([(0, ChunkProgress((1, 1), True))], 3)


def test_staleness_over_tokens_by_hand() -> None:
    # trained by version 5: lags (5-3, 5-3, 5-4) = (2, 2, 1) and (5-5,) = (0,)
    # mean over the 4 tokens (2 + 2 + 1 + 0) / 4 = 1.25, max 2; one sample of two spans
    # two versions -> fraction 0.5
    metrics = token_staleness_metrics(5, [(3, 3, 4), (5,)])
    assert metrics["async/staleness_mean"] == pytest.approx(1.25)
    assert metrics["async/staleness_max"] == 2.0
    assert metrics["async/multi_version_fraction"] == 0.5
    assert all(isinstance(v, torch.Tensor) and v.dim() == 0 for v in metrics.values())


def test_a_token_newer_than_the_trainer_is_an_error() -> None:
    with pytest.raises(ValueError, match="version 6 cannot be trained by the older version 5"):
        token_staleness_metrics(5, [(4, 6)])


def test_a_completion_needs_one_version_per_token() -> None:
    with pytest.raises(ValueError, match="3 tokens but 2 token_versions"):
        Completion(0, (1, 2, 3), "x", "stop", token_versions=(0, 1))
