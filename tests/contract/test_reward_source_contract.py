"""Contract of the ``RewardSource`` port. Append real sources to ``IMPLEMENTATIONS``.

A factory returns a :class:`RewardSubject`: the source and samples it can judge. The
protocol followed here is the colocated cycle's: onload -> score -> offload.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

from lightrft.adapters.fakes import FakeModelReward, FakeRuleReward, task
from lightrft.domain.ports import RewardSource
from lightrft.domain.types import Completion, RewardSample


@dataclass
class RewardSubject:
    source: RewardSource
    samples: list[RewardSample]


def _task_samples() -> list[RewardSample]:
    prompt = task.make_prompt("p", [4, 7])  # answer id 8
    responses = [(8, task.EOS_ID), (9, task.EOS_ID), (8,), (task.EOS_ID,)]
    return [RewardSample(prompt, Completion(0, r, task.decode(r), "stop", None)) for r in responses]


def make_rule_reward() -> RewardSubject:
    return RewardSubject(FakeRuleReward(), _task_samples())


def make_model_reward() -> RewardSubject:
    return RewardSubject(FakeModelReward(), _task_samples())


IMPLEMENTATIONS: list[object] = [
    pytest.param(make_rule_reward, id="fake-rule"),
    pytest.param(make_model_reward, id="fake-model"),
]


@pytest.fixture(params=IMPLEMENTATIONS)
def subject(request: pytest.FixtureRequest) -> RewardSubject:
    factory: Callable[[], RewardSubject] = request.param
    return factory()


def _score(subject: RewardSubject, samples: list[RewardSample]) -> torch.Tensor:
    subject.source.onload()
    try:
        result = subject.source.score(samples)
    finally:
        subject.source.offload()
    for name, value in result.metrics.items():
        assert isinstance(name, str) and isinstance(value, torch.Tensor), name
        assert value.dim() == 0 and not value.requires_grad, name
    return result.scores


def test_is_a_named_reward_source(subject: RewardSubject) -> None:
    assert isinstance(subject.source, RewardSource)
    assert isinstance(subject.source.name, str) and subject.source.name


def test_one_finite_score_per_sample(subject: RewardSubject) -> None:
    scores = _score(subject, subject.samples)
    assert scores.shape == (len(subject.samples),)
    assert scores.is_floating_point() and torch.isfinite(scores).all()
    assert not scores.requires_grad


def test_deterministic_and_order_preserving(subject: RewardSubject) -> None:
    scores = _score(subject, subject.samples)
    reversed_scores = _score(subject, subject.samples[::-1])
    torch.testing.assert_close(reversed_scores, scores.flip(0))
    torch.testing.assert_close(_score(subject, subject.samples), scores)


def test_empty_batch(subject: RewardSubject) -> None:
    assert _score(subject, []).shape == (0,)
