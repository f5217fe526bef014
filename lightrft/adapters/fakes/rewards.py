"""Reward sources of the synthetic task (:mod:`lightrft.adapters.fakes.task`).

``FakeRuleReward`` is a rule verifier; ``FakeModelReward`` scores with the same rule but
behaves like a colocated reward model: it must be onloaded to score. Shapes: B samples.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from lightrft.adapters.fakes import task
from lightrft.adapters.fakes.fake_model import RecordedPlacement
from lightrft.adapters.reward_parts.source_bases import RuleSource
from lightrft.domain.types import RewardResult, RewardSample


def rule_score(sample: RewardSample) -> float:
    """1.0 if the response is the reference digit followed by EOS, else 0.0.

    Only the first two response tokens are judged; a prompt without a reference scores 0.
    """
    reference = sample.prompt.reference
    if reference is None:
        return 0.0
    try:
        expected = task.encode_digits(reference)
    except ValueError:
        return 0.0
    wanted = (*expected, task.EOS_ID)
    return 1.0 if sample.completion.token_ids[: len(wanted)] == wanted else 0.0


def _result(samples: Sequence[RewardSample]) -> RewardResult:
    """Scores (B,) and the ``accuracy`` metric (mean score; 0 for an empty batch)."""
    scores = torch.tensor([rule_score(s) for s in samples], dtype=torch.float32)
    accuracy = scores.mean() if len(samples) else torch.zeros(())
    return RewardResult(scores=scores, metrics={"accuracy": accuracy})


class FakeRuleReward(RuleSource):
    """Rule verifier of the synthetic task; ``onload``/``offload`` are no-ops.

    Records ``score_calls`` and ``scored`` (number of samples scored).
    """

    def __init__(self, name: str = "rule") -> None:
        self._name = name
        self.score_calls = 0
        self.scored = 0

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) in {0, 1} plus ``accuracy``."""
        self.score_calls += 1
        self.scored += len(samples)
        return _result(samples)

    def close(self) -> None:
        """Nothing to release."""


class FakeModelReward(RecordedPlacement, FakeRuleReward):
    """The task's rule behind a "reward model" that must be on the device to score.

    Starts offloaded unless ``loaded=True``; ``score`` while offloaded raises
    ``RuntimeError``. Records ``onloads``, ``offloads``, ``score_calls`` and ``scored``.
    """

    def __init__(self, name: str = "model", *, loaded: bool = False) -> None:
        super().__init__(name)
        self.is_loaded = loaded

    @property
    def runs_concurrently(self) -> bool:
        """False: a model on the device, one source at a time."""
        return False

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) in {0, 1} plus ``accuracy``; only while loaded."""
        if not self.is_loaded:
            raise RuntimeError(f"reward model {self._name!r} scored while offloaded; onload first")
        return super().score(samples)
