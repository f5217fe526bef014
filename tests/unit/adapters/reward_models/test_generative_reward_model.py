"""HfGenerativeRewardModel end to end on a tiny judge run by HfRolloutEngine: a judge taught
two verdicts scores them through the parser; an untrained judge's verdicts are unparsable
and get the configured score, counted."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.hf import HfRolloutEngine
from lightrft.adapters.reward_models.generative import HfGenerativeRewardModel
from lightrft.adapters.reward_models.verdict import ScoreVerdict
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from tests.helpers.threads import one_torch_thread
from tests.unit.adapters.hf.hf_tiny import EOS, tiny_model, tiny_tokenizer
from tests.unit.adapters.reward_models.rm_tiny import teach

CPU = torch.device("cpu")
STEPS = 60
TEMPLATE = "Q {prompt} A {response} V "
VERDICTS = {"good": "Score: 9/10", "poor": "Score: 2/10"}  # same lengths: one batch


def sample(response: str) -> RewardSample:
    return RewardSample(PromptRecord("q", "2+2", (1,)), Completion(0, (2,), response, "stop"))


_one_thread = pytest.fixture(autouse=True)(one_torch_thread)


def taught_judge() -> torch.nn.Module:
    """The tiny model fitted (teacher forcing) to answer each template with its verdict."""
    tok = tiny_tokenizer()
    prompts = [
        tok(TEMPLATE.format(prompt="2+2", response=response))["input_ids"] for response in VERDICTS
    ]
    targets = [tok(verdict)["input_ids"] + [EOS] for verdict in VERDICTS.values()]
    return teach(tiny_model(seed=0), prompts, targets, steps=STEPS)


def judge(model: torch.nn.Module, **kwargs: object) -> HfGenerativeRewardModel:
    engine = HfRolloutEngine(model, tiny_tokenizer(), CPU)  # type: ignore[arg-type]
    return HfGenerativeRewardModel(
        engine,
        tiny_tokenizer(),
        ScoreVerdict(10),
        template=TEMPLATE,
        max_new_tokens=16,
        use_chat_template=False,
        **kwargs,  # type: ignore[arg-type]
    )


def test_taught_judge_scores_through_the_parser() -> None:
    rm = judge(taught_judge(), name="judge")
    result = rm.score([sample("good"), sample("poor")])
    assert rm.last_verdicts == ["Score: 9/10", "Score: 2/10"]
    torch.testing.assert_close(result.scores, torch.tensor([0.9, 0.2]))
    assert float(result.metrics["unparsable"]) == 0.0
    rm.offload()
    assert not rm.engine.is_awake
    rm.onload()
    assert rm.engine.is_awake


def test_untrained_judge_is_unparsable_and_counted() -> None:
    rm = judge(tiny_model(seed=1), unparsable_score=-0.5)
    result = rm.score([sample("good"), sample("something else")])
    assert all(ScoreVerdict(10).parse(v) is None for v in rm.last_verdicts)
    assert result.scores.tolist() == [-0.5, -0.5]
    assert float(result.metrics["unparsable"]) == 2.0
    assert float(result.metrics["unparsable_rate"]) == 1.0


def test_template_errors() -> None:
    with pytest.raises(ValueError, match="only"):
        HfGenerativeRewardModel(None, tiny_tokenizer(), ScoreVerdict(10), template="Grade {answer}")  # type: ignore[arg-type]
