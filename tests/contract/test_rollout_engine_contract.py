"""Contract of the ``RolloutEngine`` port: every implementation must pass these.

Append a factory to ``IMPLEMENTATIONS`` (GPU-only engines marked ``pytest.mark.gpu``). A
factory returns an :class:`EngineSubject`: an awake engine, prompts it can answer, and a
policy whose weights differ from the engine's (``load_weights`` of its
``weights_for_sync`` must change the outputs, and then agree with its log-probs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

from lightrft.adapters.fakes import (
    FakePolicy,
    FakeRolloutEngine,
    completions_batch,
    synthetic_prompts,
)
from lightrft.domain.ports import Policy, RolloutEngine
from lightrft.domain.types import PromptRecord, SamplingParams


@dataclass
class EngineSubject:
    engine: RolloutEngine
    prompts: list[PromptRecord]
    policy: Policy  # weights different from the engine's
    logprob_atol: float = 1e-4  # engine vs trainer log-prob tolerance (bf16 engines: ~0.1)


def make_fake_engine() -> EngineSubject:
    source = synthetic_prompts(4, seed=0)
    return EngineSubject(
        FakeRolloutEngine(seed=0), [source[i] for i in range(4)], policy=FakePolicy(seed=1)
    )


IMPLEMENTATIONS: list[object] = [pytest.param(make_fake_engine, id="fake")]

SAMPLING = SamplingParams(n=3, max_new_tokens=5, seed=7)


@pytest.fixture(params=IMPLEMENTATIONS)
def subject(request: pytest.FixtureRequest) -> EngineSubject:
    factory: Callable[[], EngineSubject] = request.param
    return factory()


def _sync(subject: EngineSubject) -> None:
    module = subject.policy.module
    full_state = ((n, p.detach().clone()) for n, p in module.named_parameters())
    subject.engine.load_weights(subject.policy.weights_for_sync(full_state))


def test_is_a_rollout_engine_and_awake(subject: EngineSubject) -> None:
    assert isinstance(subject.engine, RolloutEngine)
    assert subject.engine.is_awake


def test_n_completions_per_prompt_grouped(subject: EngineSubject) -> None:
    completions = subject.engine.generate(subject.prompts, SAMPLING)
    n = SAMPLING.n
    assert len(completions) == n * len(subject.prompts)
    assert [c.prompt_index for c in completions] == [i // n for i in range(len(completions))]
    for c in completions:
        assert c.finish_reason in ("stop", "length")
        assert 1 <= len(c.token_ids) <= SAMPLING.max_new_tokens
        if c.finish_reason == "length":
            assert len(c.token_ids) == SAMPLING.max_new_tokens
        assert c.logprobs is not None and len(c.logprobs) == len(c.token_ids)
        assert all(lp <= 1e-6 for lp in c.logprobs)
        assert isinstance(c.text, str)
    assert subject.engine.generate([], SAMPLING) == []


def test_same_seed_same_outputs(subject: EngineSubject) -> None:
    first = subject.engine.generate(subject.prompts, SAMPLING)
    second = subject.engine.generate(subject.prompts, SAMPLING)
    assert [c.token_ids for c in first] == [c.token_ids for c in second]


def test_greedy_is_deterministic(subject: EngineSubject) -> None:
    greedy = SamplingParams(n=2, temperature=0.0, max_new_tokens=4)
    first = subject.engine.generate(subject.prompts, greedy)
    second = subject.engine.generate(subject.prompts, greedy)
    assert [c.token_ids for c in first] == [c.token_ids for c in second]
    assert first[0].token_ids == first[1].token_ids  # both samples of a prompt agree


def test_generate_while_asleep_raises(subject: EngineSubject) -> None:
    subject.engine.sleep()
    assert not subject.engine.is_awake
    with pytest.raises(RuntimeError):
        subject.engine.generate(subject.prompts, SAMPLING)
    subject.engine.wake_up()
    assert subject.engine.is_awake


def test_sleep_wake_round_trip_keeps_outputs(subject: EngineSubject) -> None:
    before = subject.engine.generate(subject.prompts, SAMPLING)
    subject.engine.sleep()
    subject.engine.wake_up()
    after = subject.engine.generate(subject.prompts, SAMPLING)
    assert [c.token_ids for c in after] == [c.token_ids for c in before]
    for a, b in zip(after, before, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-6)


def test_load_weights_changes_outputs_and_matches_policy(subject: EngineSubject) -> None:
    greedy = SamplingParams(temperature=0.0, max_new_tokens=4)
    before = subject.engine.generate(subject.prompts, greedy)
    _sync(subject)
    after = subject.engine.generate(subject.prompts, greedy)
    assert [(c.token_ids, c.logprobs) for c in after] != [(c.token_ids, c.logprobs) for c in before]
    sampled = subject.engine.generate(subject.prompts, SAMPLING)
    batch = completions_batch(subject.prompts, sampled)
    with torch.no_grad():
        expected = subject.policy.forward(batch).logprobs.float().cpu()
    for row, c in enumerate(sampled):
        got = torch.tensor(c.logprobs)
        torch.testing.assert_close(
            got, expected[row, : len(got)], atol=subject.logprob_atol, rtol=0
        )
