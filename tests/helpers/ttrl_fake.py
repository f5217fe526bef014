"""TTRL on the synthetic task: a digit grader and a label-free continuation of a fake rig."""

from __future__ import annotations

from dataclasses import replace

from lightrft.adapters.fakes import FakeRuleReward
from lightrft.adapters.rewards import MajorityVoteReward
from lightrft.application.cycle import RLCycle
from lightrft.application.evaluator import Evaluator
from lightrft.domain.eval_metrics import GradedAnswer
from lightrft.domain.types import PromptRecord
from tests.helpers.fake_cycle import FakeRig


class DigitGrader:
    """The synthetic task's answer: a response of exactly one digit then EOS (text of one
    character; EOS is skipped in the text, and longer responses hold more digits)."""

    def grade(self, response: str, reference: str | None) -> GradedAnswer:
        key = response if len(response) == 1 else None
        correct = None if reference is None else key == reference
        return GradedAnswer(key, correct)


class Unlabeled:
    """A prompt source with every reference removed (the TTRL cycle never sees labels)."""

    def __init__(self, source: object) -> None:
        self.source = source

    def __len__(self) -> int:
        return len(self.source)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> PromptRecord:
        return replace(self.source[index], reference=None)  # type: ignore[index]


def ttrl_cycle(rig: FakeRig, total_steps: int) -> RLCycle:
    """The rig's policy, strategy and engine, now rewarded by majority vote, without labels.

    Only the held-out prompts keep their references, for :func:`true_accuracy`.
    """
    c, s = rig.cycle.components, rig.cycle.settings
    if not c.engine.is_awake:  # a new cycle expects its components awake, as when built
        c.engine.wake_up()
    c.policy_strategy.onload()
    components = replace(
        c, prompts=Unlabeled(c.prompts), reward_sources=[MajorityVoteReward(DigitGrader())]
    )
    settings = replace(
        s,
        shaping=replace(s.shaping, weights={}),
        cycle=replace(s.cycle, total_steps=total_steps, eval_every=None, seed=s.cycle.seed + 1),
    )
    return RLCycle(components, settings)


def true_accuracy(cycle: RLCycle) -> float:
    """Greedy accuracy of the cycle's policy on its held-out prompts by the labelled rule."""
    cycle.evaluator = Evaluator(cycle.components.engine, [FakeRuleReward()])
    return cycle.evaluate()["eval/accuracy"]


__all__ = ["DigitGrader", "Unlabeled", "true_accuracy", "ttrl_cycle"]
