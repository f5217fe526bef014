"""Contract of the ``RewardSource`` port. Append real sources to ``IMPLEMENTATIONS``.

A factory returns a :class:`RewardSubject`: the source, samples it can judge and the scores
it must give them (worked out by hand). The protocol followed here is the colocated cycle's:
onload -> score -> offload. A source with a ``close()`` method is closed after each test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
import torch

from lightrft.adapters.fakes import FakeModelReward, FakeRuleReward, task
from lightrft.adapters.rewards import (
    FormatReward,
    LengthReward,
    MajorityVoteReward,
    MathAnswerReward,
    PythonFunctionReward,
)
from lightrft.domain.ports import RewardSource
from lightrft.domain.types import Completion, RewardSample
from tests.contract.real_adapters import REWARD_RESPONSES, reward_samples


@dataclass
class RewardSubject:
    source: RewardSource
    samples: list[RewardSample]
    expected: tuple[float, ...]  # the score of each sample


def _task_samples() -> list[RewardSample]:
    prompt = task.make_prompt("p", [4, 7])  # answer id 8
    responses = [(8, task.EOS_ID), (9, task.EOS_ID), (8,), (task.EOS_ID,)]
    return [RewardSample(prompt, Completion(0, r, task.decode(r), "stop", None)) for r in responses]


_TASK_SCORES = (1.0, 0.0, 0.0, 0.0)  # only "8 EOS" answers 4 + 7 (no EOS: wrong)


def make_rule_reward() -> RewardSubject:
    return RewardSubject(FakeRuleReward(), _task_samples(), _TASK_SCORES)


def make_model_reward() -> RewardSubject:
    return RewardSubject(FakeModelReward(), _task_samples(), _TASK_SCORES)


# The real sources judge REWARD_RESPONSES to "2+5=" (reference "7"):
#   "#### 7", "7", "<think>3 plus 4</think> #### 7", "#### 8", "no idea", ""
# each as its byte tokens then EOS: 7, 2, 31, 7, 8 and 1 tokens.


def make_math_reward() -> RewardSubject:
    return RewardSubject(MathAnswerReward(), reward_samples(), (1.0, 1.0, 1.0, 0.0, 0.0, 0.0))


def make_format_reward() -> RewardSubject:
    return RewardSubject(FormatReward(), reward_samples(), (0.0, 0.0, 1.0, 0.0, 0.0, 0.0))


def make_length_reward() -> RewardSubject:
    # No penalty up to 8 - 4 = 4 tokens, then -(length - 4) / 4 down to -1 at 8 and beyond.
    source = LengthReward(max_length=8, cache_length=4)
    return RewardSubject(source, reward_samples(), (-0.75, 0.0, -1.0, -0.75, -1.0, 0.0))


def make_python_function_reward() -> RewardSubject:
    # text_checksum: (sum of the response's character codes mod 97) / 96.
    expected = tuple((sum(map(ord, text)) % 97) / 96 for text in REWARD_RESPONSES)
    source = PythonFunctionReward("tests.helpers.toy_rewards:text_checksum")
    return RewardSubject(source, reward_samples(), expected)


def make_majority_vote_reward() -> RewardSubject:
    # one group (prompt_index 0): answers 7, 7, 7, 8, none, none -> the majority 7 agrees
    return RewardSubject(MajorityVoteReward(), reward_samples(), (1.0, 1.0, 1.0, 0.0, 0.0, 0.0))


def make_scalar_reward_model() -> RewardSubject:
    from lightrft.adapters.reward_models import HfScalarRewardModel
    from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer
    from tests.unit.adapters.reward_models.rm_tiny import tiny_classifier

    classifier, tok = (
        tiny_classifier(seed=5).double(),
        tiny_tokenizer(),
    )  # float64: no padding noise
    samples = reward_samples()
    expected = []
    for sample in samples:  # the classifier's own forward on the unpadded prompt + response
        ids = tok(sample.prompt.prompt_text, add_special_tokens=False)["input_ids"]
        ids += tok(sample.completion.text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            expected.append(float(classifier(torch.tensor([ids])).logits[0, 0]))
    source = HfScalarRewardModel(classifier, tok, torch.device("cpu"), micro_batch_size=4)
    return RewardSubject(source, samples, tuple(expected))


def make_process_reward_model() -> RewardSubject:
    from lightrft.adapters.reward_models.process import HfProcessRewardModel
    from lightrft.adapters.reward_models.process_card import ProcessRewardCard
    from tests.unit.adapters.hf.hf_tiny import tiny_model, tiny_tokenizer

    lm, tok = tiny_model(seed=5).double(), tiny_tokenizer()
    plus, minus = tok.convert_tokens_to_ids(["+", "-"])
    samples = reward_samples()
    expected = []
    for sample in samples:  # the LM's own forward on the unpadded text, the min step score
        text, ends = sample.prompt.prompt_text, []
        for word in sample.completion.text.split():
            text += word + " "
            ends.append(len(tok(text, add_special_tokens=False)["input_ids"]) - 1)
        with torch.no_grad():
            logits = lm(torch.tensor([tok(text, add_special_tokens=False)["input_ids"]])).logits
        probs = [float(torch.softmax(logits[0, e, [plus, minus]], -1)[0]) for e in ends]
        expected.append(min(probs) if probs else 0.0)
    card = ProcessRewardCard(separator=" ")
    source = HfProcessRewardModel(lm, tok, torch.device("cpu"), card=card, micro_batch_size=4)
    return RewardSubject(source, samples, tuple(expected))


_SERVED: dict[str, object] = {}


def make_remote_reward() -> RewardSubject:
    # FormatReward behind the reward service on loopback, one server for the session
    from lightrft.adapters.reward_service import BackgroundServer, RemoteRewardSource, create_app

    if "server" not in _SERVED:
        server = BackgroundServer(create_app(FormatReward()))
        server.start()
        _SERVED["server"] = server
    url = _SERVED["server"].url  # type: ignore[attr-defined]
    return RewardSubject(RemoteRewardSource(url), reward_samples(), (0.0, 0.0, 1.0, 0.0, 0.0, 0.0))


def make_unit_tests_reward() -> RewardSubject:
    from lightrft.adapters.rewards.unit_tests import UnitTestsReward
    from lightrft.adapters.sandbox import open_sandbox

    # The program is the response then the reference "7" as the test: "#### 7", "7", "#### 8"
    # and "" run cleanly; "<think>..." and "no idea" are syntax errors.
    source = UnitTestsReward(open_sandbox(), timeout_s=5.0)
    return RewardSubject(source, reward_samples(), (1.0, 1.0, 0.0, 1.0, 0.0, 1.0))


IMPLEMENTATIONS: list[object] = [
    pytest.param(make_rule_reward, id="fake-rule"),
    pytest.param(make_model_reward, id="fake-model"),
    pytest.param(make_math_reward, id="math"),
    pytest.param(make_format_reward, id="format"),
    pytest.param(make_length_reward, id="length"),
    pytest.param(make_python_function_reward, id="python-function"),
    pytest.param(make_majority_vote_reward, id="ttrl"),
    pytest.param(make_scalar_reward_model, id="scalar-rm"),
    pytest.param(make_process_reward_model, id="process-rm"),
    pytest.param(make_remote_reward, id="remote"),
    pytest.param(make_unit_tests_reward, id="unit-tests"),
]


@pytest.fixture(params=IMPLEMENTATIONS)
def subject(request: pytest.FixtureRequest) -> Iterator[RewardSubject]:
    factory: Callable[[], RewardSubject] = request.param
    made = factory()
    yield made
    close = getattr(made.source, "close", None)
    if callable(close):
        close()


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
    assert scores.tolist() == pytest.approx(subject.expected, abs=1e-6)


def test_deterministic_and_order_preserving(subject: RewardSubject) -> None:
    scores = _score(subject, subject.samples)
    reversed_scores = _score(subject, subject.samples[::-1])
    torch.testing.assert_close(reversed_scores, scores.flip(0))
    torch.testing.assert_close(_score(subject, subject.samples), scores)


def test_empty_batch(subject: RewardSubject) -> None:
    assert _score(subject, []).shape == (0,)
