"""The prompt cost model of balanced batches: tokens plus weighted media-encoder units, and
the weight deciding which prompts share a rank."""

from __future__ import annotations

import pytest

from lightrft.adapters.fakes import FakeCollective
from lightrft.application.params import CycleParams, RolloutParams
from lightrft.application.step_prompts import StepPrompts
from lightrft.domain.modality import COST_KEY
from lightrft.domain.prompt_cost import prompt_cost
from lightrft.domain.types import PromptRecord


def test_cost_is_tokens_plus_weighted_encoder_units() -> None:
    image = {COST_KEY: 96}  # e.g. 24 merged positions of 4 patches each
    assert prompt_cost(40, {}) == 40  # text: its tokens
    assert prompt_cost(40, image) == 136  # w = 1: a patch costs a token
    assert prompt_cost(40, image, 0.0) == 40
    assert prompt_cost(40, image, 0.25) == 64
    assert prompt_cost(40, image, 0.1) == 50  # round(9.6)
    with pytest.raises(ValueError, match="encoder_weight must be >= 0, got -1"):
        prompt_cost(40, image, -1.0)
    with pytest.raises(ValueError, match="balance_encoder_weight must be >= 0"):
        RolloutParams(balance_encoder_weight=-0.5)


class Rank(FakeCollective):
    """Rank ``rank`` of 2."""

    def __init__(self, rank: int) -> None:
        super().__init__()
        self._rank = rank

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def world_size(self) -> int:
        return 2


def _prompts() -> list[PromptRecord]:
    """a, b: text of 100 and 90 tokens; c: 60 tokens of which media, 200 encoder units;
    d: 50 text tokens."""

    def record(uid: str, tokens: int, units: int) -> PromptRecord:
        payload = {COST_KEY: units} if units else {}
        return PromptRecord(uid, uid, tuple(range(tokens)), multimodal=payload)

    return [record("a", 100, 0), record("b", 90, 0), record("c", 60, 200), record("d", 50, 0)]


def _split(weight: float) -> list[set[str]]:
    rollout = RolloutParams(prompts_per_step=2, balance_ranks=True, balance_encoder_weight=weight)
    cycle = CycleParams(seed=0, shuffle_prompts=False)
    return [{p.uid for p in StepPrompts(_prompts(), Rank(r), rollout, cycle)(0)[0]} for r in (0, 1)]


def test_the_encoder_weight_decides_which_prompts_share_a_rank() -> None:
    # w = 0, costs 100 90 60 50: greedy a->0, b->1, c->1 (90 < 100), d->0: 150 / 150
    assert _split(0.0) == [{"a", "d"}, {"b", "c"}]
    # w = 1, costs 100 90 260 50: c->0, a->1, b->1 (rank 0 is heavier), d->0: 310 / 190
    assert _split(1.0) == [{"c", "d"}, {"a", "b"}]
