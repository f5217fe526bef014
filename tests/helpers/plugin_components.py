"""Test-only components registered the way a third-party plugin registers them.

Listed in a config's ``plugins`` key, this module is imported before validation and adds a
rollout engine (``scripted``) and a reward source (``constant``): each is one class, one
config model and one builder, following ``docs/extending.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import torch
from pydantic import Field

from lightrft.domain.ports import NamedTensors
from lightrft.domain.types import (
    Completion,
    PromptRecord,
    RewardResult,
    RewardSample,
    SamplingParams,
)
from lightrft.entrypoints.config.components import ComponentSection, RewardSourceSection
from lightrft.entrypoints.wiring.registries import BuildContext, register_component


class ScriptedEngine:
    """Answers every prompt with the same tokens (an honest engine for wiring tests)."""

    def __init__(self, token_ids: Sequence[int], text: str) -> None:
        self.token_ids, self.text = tuple(token_ids), text
        self.generate_calls = 0
        self.weight_syncs = 0
        self._awake = True

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        if not self._awake:
            raise RuntimeError("generate while asleep")
        self.generate_calls += 1
        length = min(len(self.token_ids), sampling.max_new_tokens)
        return [
            Completion(i, self.token_ids[:length], self.text, "length")
            for i in range(len(prompts))
            for _ in range(sampling.n)
        ]

    def load_weights(self, weights: NamedTensors) -> None:
        for _ in weights:
            pass
        self.weight_syncs += 1

    def sleep(self) -> None:
        self._awake = False

    def wake_up(self) -> None:
        self._awake = True

    @property
    def is_awake(self) -> bool:
        return self._awake

    @property
    def shares_policy_weights(self) -> bool:
        return False


class ScriptedEngineConfig(ComponentSection):
    type: Literal["scripted"] = "scripted"
    response: str = Field("42", description="The text every completion holds.")


def build_scripted(section: ScriptedEngineConfig, context: BuildContext) -> ScriptedEngine:
    ids = context.tokenizer(section.response, add_special_tokens=False)["input_ids"]
    return ScriptedEngine(ids, section.response)


class ConstantReward:
    """Scores every sample ``value``."""

    def __init__(self, name: str, value: float) -> None:
        self._name, self.value = name, value
        self.closed = False

    @property
    def name(self) -> str:
        return self._name

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        scores = torch.full((len(samples),), self.value)
        return RewardResult(scores, {f"{self._name}/mean": scores.mean()})

    def onload(self) -> None:
        """No model."""

    def offload(self) -> None:
        """No model."""

    def close(self) -> None:
        self.closed = True


class ConstantRewardConfig(RewardSourceSection):
    type: Literal["constant"] = "constant"
    value: float = Field(description="The score of every sample.")


def build_constant(section: ConstantRewardConfig, context: Any) -> ConstantReward:
    return ConstantReward(section.label, section.value)


register_component("engine", "scripted", ScriptedEngineConfig, build_scripted)
register_component("reward_source", "constant", ConstantRewardConfig, build_constant)
