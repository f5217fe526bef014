"""score_completions with several named, weighted sources and a gate."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch

from lightrft.application.reward_scoring import score_completions
from lightrft.domain.types import Completion, PromptRecord, RewardResult, RewardSample


class TableReward:
    """Scores completion i with ``values[i]``."""

    def __init__(self, name: str, values: list[float]) -> None:
        self.name, self.values = name, values

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        return RewardResult(torch.tensor(self.values[: len(samples)]), {"calls": torch.tensor(1.0)})

    def onload(self) -> None: ...

    def offload(self) -> None: ...


PROMPTS = [PromptRecord("p", "q", (1,))]
COMPLETIONS = [Completion(0, (2,), t, "stop") for t in ("a", "b", "c")]


def test_weighted_sum_gate_and_metrics() -> None:
    rm = TableReward("rm", [0.5, 2.0, -1.0])
    fmt = TableReward("format", [1.0, 0.0, 1.0])
    scores = score_completions(
        [rm, fmt], PROMPTS, COMPLETIONS, {"rm": 2.0, "format": 0.1}, {"format": 1.0}, -3.0
    )
    # weighted: 2 * [0.5, 2, -1] + 0.1 * [1, 0, 1] = [1.1, 4.0, -1.9]; sample 1 fails the gate
    torch.testing.assert_close(scores.total, torch.tensor([1.1, -3.0, -1.9]))
    assert scores.metrics["reward/gate_pass_rate"] == pytest.approx(2 / 3)
    assert scores.metrics["reward/rm/mean"] == pytest.approx(0.5)
    assert scores.metrics["reward/format/calls"] == 1.0
    assert scores.metrics["time/reward/rm_s"] >= 0.0
    torch.testing.assert_close(scores.by_source["format"], torch.tensor([1.0, 0.0, 1.0]))


def test_no_gate_keeps_the_sum() -> None:
    rm = TableReward("rm", [0.5, 2.0, -1.0])
    scores = score_completions([rm], PROMPTS, COMPLETIONS, {})
    torch.testing.assert_close(scores.total, torch.tensor([0.5, 2.0, -1.0]))
    assert "reward/gate_pass_rate" not in scores.metrics
