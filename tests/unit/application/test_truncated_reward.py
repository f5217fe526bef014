"""reward.truncated_reward: a response cut off at the length limit earns a fixed reward in
training, while evaluation keeps scoring it as written."""

from __future__ import annotations

import pytest
import torch

from lightrft.application.reward_scoring import score_completions, score_truncated_as
from lightrft.domain.types import Completion, PromptRecord
from lightrft.entrypoints.config.loading import load_config
from tests.unit.application.test_reward_gates import TableReward

PROMPTS = [PromptRecord("p", "q", (1,))]
# the second and third responses hit max_new_tokens; the third ends on a lucky number
COMPLETIONS = [
    Completion(0, (2,), "7", "stop"),
    Completion(0, (2,) * 16, "To solve this we", "length"),
    Completion(0, (2,) * 16, "Tom has 3 and buys 7", "length"),
    Completion(0, (2,), "5", "stop"),
]


def test_truncated_totals_are_replaced_and_sources_kept() -> None:
    math = TableReward("math", [1.0, 0.0, 1.0, 0.0])
    scores = score_truncated_as(
        score_completions([math], PROMPTS, COMPLETIONS, {}), COMPLETIONS, -1.0
    )
    # finished: scored as written (1, 0); truncated: -1 whatever their score was
    torch.testing.assert_close(scores.total, torch.tensor([1.0, -1.0, -1.0, 0.0]))
    torch.testing.assert_close(scores.by_source["math"], torch.tensor([1.0, 0.0, 1.0, 0.0]))
    assert scores.metrics["reward/truncated_replaced"] == pytest.approx(0.5)


def test_config_key_reaches_the_shaping_params() -> None:
    config = load_config(None, ["reward.truncated_reward=0"], algorithm="grpo")
    assert config.to_domain().shaping.truncated_reward == 0.0
    assert load_config(None, [], algorithm="grpo").to_domain().shaping.truncated_reward is None
