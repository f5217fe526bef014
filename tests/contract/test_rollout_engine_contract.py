"""Contract of the ``RolloutEngine`` port: every implementation must pass these.

Append a factory to ``IMPLEMENTATIONS`` (GPU-only engines marked ``pytest.mark.gpu``). A
factory returns an :class:`EngineSubject`: an awake engine, prompts it can answer, and a
policy whose weights differ from the engine's (``load_weights`` of its
``weights_for_sync`` must change the outputs, and then agree with its log-probs).

An engine that runs the policy's own module (``HfRolloutEngine(shares_policy_weights=True)``)
sets ``update_policy``: the test changes the policy's weights with it instead of holding a
second policy, and syncs by passing the module's own tensors (no copies).

An engine whose ``sleep`` drops the weights (vLLM's level-2 sleep, ``HfRolloutEngine`` with
``sleep_mode="discard"``) sets ``reload_weights``: after ``wake_up`` it must refuse to
generate (``RuntimeError``) until ``load_weights(reload_weights())`` gave the weights back.
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
from lightrft.adapters.hf import HfPolicy, HfRolloutEngine
from lightrft.adapters.hf.rollout import SleepMode
from lightrft.domain.ports import NamedTensors, Policy, RolloutEngine
from lightrft.domain.types import PromptRecord, SamplingParams
from tests.contract.real_adapters import CPU, short_prompts, tiny_model, tiny_tokenizer


@dataclass
class EngineSubject:
    engine: RolloutEngine
    prompts: list[PromptRecord]
    policy: Policy  # weights different from the engine's
    logprob_atol: float = 1e-4  # engine vs trainer log-prob tolerance (bf16 engines: ~0.1)
    reload_weights: Callable[[], NamedTensors] | None = None  # engines that drop weights
    update_policy: Callable[[], None] | None = None  # engines sharing the policy's weights


def make_fake_engine() -> EngineSubject:
    source = synthetic_prompts(4, seed=0)
    return EngineSubject(
        FakeRolloutEngine(seed=0), [source[i] for i in range(4)], policy=FakePolicy(seed=1)
    )


def make_hf_engine(sleep_mode: SleepMode) -> EngineSubject:
    model = tiny_model(0)
    initial = [(name, p.detach().clone()) for name, p in model.named_parameters()]
    engine = HfRolloutEngine(model, tiny_tokenizer(), CPU, sleep_mode=sleep_mode)
    reload = (lambda: iter(initial)) if sleep_mode == "discard" else None
    return EngineSubject(engine, short_prompts(), HfPolicy(tiny_model(1)), reload_weights=reload)


def make_vllm_engine() -> EngineSubject:
    """The process's shared in-process vLLM engine (CPU: sleep keeps the weights), reset to
    ``tiny_vllm_model(0)``; skipped when vLLM is not installed."""
    from tests.unit.adapters.vllm.vllm_tiny import shared_engine, tiny_vllm_model

    engine, _ = shared_engine()
    return EngineSubject(engine, short_prompts(), HfPolicy(tiny_vllm_model(1)))


def make_shared_hf_engine() -> EngineSubject:
    model = tiny_model(0)
    engine = HfRolloutEngine(model, tiny_tokenizer(), CPU, shares_policy_weights=True)
    other = tiny_model(1).state_dict()
    return EngineSubject(
        engine,
        short_prompts(),
        HfPolicy(model),
        update_policy=lambda: model.load_state_dict(other),
    )


IMPLEMENTATIONS: list[object] = [
    pytest.param(make_fake_engine, id="fake"),
    pytest.param(lambda: make_hf_engine("offload"), id="hf-offload"),
    pytest.param(lambda: make_hf_engine("discard"), id="hf-discard"),
    pytest.param(make_shared_hf_engine, id="hf-shared"),
    pytest.param(make_vllm_engine, id="vllm"),
]

SAMPLING = SamplingParams(n=3, max_new_tokens=5, seed=7)

# (test, implementation id) -> open adapter bug. Strict: a fixed bug fails until removed here.
_EMPTY_BUG = (
    "HfRolloutEngine.generate([]) raises ValueError: transformers 5's "
    "tokenizer.batch_decode([]) returns [''], which zip(strict=True) rejects"
)
KNOWN_BUGS: dict[tuple[str, str], str] = {}


@pytest.fixture(params=IMPLEMENTATIONS)
def subject(request: pytest.FixtureRequest) -> EngineSubject:
    factory: Callable[[], EngineSubject] = request.param
    return factory()


def _sync(subject: EngineSubject) -> None:
    module = subject.policy.module
    if subject.update_policy is not None:  # shared weights: the engine's own tensors
        full_state = ((n, p.detach()) for n, p in module.named_parameters())
    else:
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


def test_no_prompts_no_completions(subject: EngineSubject) -> None:
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
    if subject.reload_weights is not None:
        with pytest.raises(RuntimeError):
            subject.engine.generate(subject.prompts, SAMPLING)
        subject.engine.load_weights(subject.reload_weights())
    after = subject.engine.generate(subject.prompts, SAMPLING)
    assert [c.token_ids for c in after] == [c.token_ids for c in before]
    for a, b in zip(after, before, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-6)


def test_load_weights_changes_outputs_and_matches_policy(subject: EngineSubject) -> None:
    greedy = SamplingParams(temperature=0.0, max_new_tokens=4)
    before = subject.engine.generate(subject.prompts, greedy)
    if subject.update_policy is not None:
        subject.update_policy()
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
