"""FakeRolloutEngine: sampling, log-probs, stops, weight sync and sleep bookkeeping."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.fakes import (
    FakePolicy,
    FakeRolloutEngine,
    FakeStrategy,
    completions_batch,
    synthetic_prompts,
    task,
)
from lightrft.domain.ports import RolloutEngine
from lightrft.domain.types import OptimizerParams, PromptRecord, SamplingParams

PROMPTS = [synthetic_prompts(6, seed=11)[i] for i in range(6)]


def _trained_policy(steps: int = 5) -> FakePolicy:
    """A policy moved away from its seed's weights by a few AdamW steps."""
    policy = FakePolicy(seed=0)
    strategy = FakeStrategy(OptimizerParams(lr=0.05))
    strategy.prepare(policy.module)
    engine = FakeRolloutEngine(seed=0)
    completions = engine.generate(PROMPTS, SamplingParams(n=2, max_new_tokens=5, seed=0))
    batch = completions_batch(PROMPTS, completions)
    for _ in range(steps):
        strategy.backward(-policy.forward(batch).logprobs.sum())
        strategy.step()
    return policy


def _first_token_logits(policy: FakePolicy, prompts: list[PromptRecord]) -> torch.Tensor:
    """Next-token logits after each prompt. Shape (len(prompts), V)."""
    rows = [
        policy.module(torch.tensor([p.prompt_token_ids]), torch.ones(1, len(p.prompt_token_ids)))
        for p in prompts
    ]
    return torch.cat([r[:, -1] for r in rows])


def test_is_a_rollout_engine_equal_to_initial_policy() -> None:
    engine = FakeRolloutEngine(seed=3)
    assert isinstance(engine, RolloutEngine)
    policy = FakePolicy(seed=3)
    weights = engine.named_parameters()
    for name, param in policy.module.named_parameters():
        assert torch.equal(weights[name], param)


@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_logprobs_after_sync_equal_policy_forward(temperature: float) -> None:
    policy = _trained_policy()
    engine = FakeRolloutEngine(seed=0)
    sampling = SamplingParams(n=3, temperature=temperature, max_new_tokens=6, seed=1)
    stale = engine.generate(PROMPTS, sampling)
    engine.load_weights(policy.weights_for_sync(policy.module.named_parameters()))
    assert engine.weight_syncs == 1
    completions = engine.generate(PROMPTS, sampling)
    assert [c.token_ids for c in completions] != [c.token_ids for c in stale]
    batch = completions_batch(PROMPTS, completions)
    with torch.no_grad():
        expected = policy.forward(batch, temperature=temperature).logprobs
    for row, completion in enumerate(completions):
        got = torch.tensor(completion.logprobs)
        torch.testing.assert_close(got, expected[row, : len(got)], atol=1e-5, rtol=1e-5)


def test_fire_first_token_uses_its_own_temperature() -> None:
    policy = FakePolicy(seed=0)
    engine = FakeRolloutEngine(seed=0)
    sampling = SamplingParams(n=2, temperature=0.8, first_token_temperature=5.0, seed=2)
    completions = engine.generate(PROMPTS, sampling)
    batch = completions_batch(PROMPTS, completions)
    with torch.no_grad():
        hot = policy.forward(batch, temperature=5.0).logprobs
        normal = policy.forward(batch, temperature=0.8).logprobs
    for row, completion in enumerate(completions):
        lp = torch.tensor(completion.logprobs)
        torch.testing.assert_close(lp[0], hot[row, 0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(lp[1:], normal[row, 1 : len(lp)], atol=1e-5, rtol=1e-5)


def test_grouping_stops_and_finish_reasons() -> None:
    engine = FakeRolloutEngine(seed=0)
    completions = engine.generate(PROMPTS, SamplingParams(n=4, max_new_tokens=3, seed=0))
    assert len(completions) == 24
    assert [c.prompt_index for c in completions] == [i // 4 for i in range(24)]
    reasons = {c.finish_reason for c in completions}
    assert reasons == {"stop", "length"}  # an untrained model sometimes stops, sometimes not
    for c in completions:
        assert c.logprobs is not None and len(c.logprobs) == len(c.token_ids)
        assert all(lp <= 0 for lp in c.logprobs)
        assert task.EOS_ID not in c.token_ids[:-1]
        if c.finish_reason == "stop":
            assert c.token_ids[-1] == task.EOS_ID
        else:
            assert len(c.token_ids) == 3 and c.token_ids[-1] != task.EOS_ID
        assert c.text == task.decode(c.token_ids)


def test_ignore_eos_makes_every_completion_full_length() -> None:
    engine = FakeRolloutEngine(seed=0)
    sampling = SamplingParams(n=4, max_new_tokens=3, seed=0, ignore_eos=True)
    completions = engine.generate(PROMPTS, sampling)
    assert all(len(c.token_ids) == 3 and c.finish_reason == "length" for c in completions)
    assert any(task.EOS_ID in c.token_ids for c in completions)  # sampled, not stopped at


def test_stop_token_ids_and_stop_strings() -> None:
    engine = FakeRolloutEngine(seed=0)
    digits = tuple(range(3, 16))
    by_id = engine.generate(PROMPTS, SamplingParams(n=2, stop_token_ids=digits, seed=0))
    for c in by_id:
        assert len(c.token_ids) == 1 or (c.token_ids[-1] in digits and c.finish_reason == "stop")
        assert not set(c.token_ids[:-1]) & set(digits)
    by_text = engine.generate(
        PROMPTS, SamplingParams(n=2, max_new_tokens=8, stop_strings=("5",), seed=0)
    )
    stopped = [c for c in by_text if c.finish_reason == "stop" and c.token_ids[-1] == 8]
    assert stopped  # id 8 renders as "5"
    for c in stopped:
        assert "5" not in c.text
        assert c.text == task.decode(c.token_ids[:-1])


def test_seed_reproduces_and_engine_stream_advances() -> None:
    engine = FakeRolloutEngine(seed=0)
    seeded = SamplingParams(n=4, seed=123)
    assert engine.generate(PROMPTS, seeded) == engine.generate(PROMPTS, seeded)
    free = SamplingParams(n=4)
    first, second = engine.generate(PROMPTS, free), engine.generate(PROMPTS, free)
    assert first != second
    assert FakeRolloutEngine(seed=0).generate(PROMPTS, free) == first


def test_greedy_and_top_k_one_pick_the_argmax() -> None:
    policy = FakePolicy(seed=0)
    engine = FakeRolloutEngine(seed=0)
    greedy = engine.generate(PROMPTS, SamplingParams(temperature=0.0, max_new_tokens=1))
    top1 = engine.generate(PROMPTS, SamplingParams(top_k=1, max_new_tokens=1, seed=5))
    with torch.no_grad():
        logits = _first_token_logits(policy, PROMPTS)
    argmax = logits.argmax(-1).tolist()
    assert [c.token_ids[0] for c in greedy] == argmax
    assert [c.token_ids[0] for c in top1] == argmax
    expected = logits.log_softmax(-1).max(-1).values  # greedy reports temperature-1 log-probs
    torch.testing.assert_close(torch.tensor([(c.logprobs or ())[0] for c in greedy]), expected)


def test_first_token_frequencies_follow_the_tempered_softmax() -> None:
    policy = FakePolicy(seed=0)
    prompt = PROMPTS[0]
    engine = FakeRolloutEngine(seed=0)
    n = 4000
    completions = engine.generate(
        [prompt], SamplingParams(n=n, temperature=2.0, max_new_tokens=1, seed=9)
    )
    counts = torch.bincount(torch.tensor([c.token_ids[0] for c in completions]), minlength=16)
    with torch.no_grad():
        probs = (_first_token_logits(policy, [prompt])[0] / 2.0).softmax(-1)
    # each frequency within 4 binomial standard deviations of its probability
    sd = (probs * (1 - probs) / n).sqrt()
    assert torch.all((counts / n - probs).abs() <= 4 * sd + 1e-3)


def test_top_k_keeps_only_allowed_tokens() -> None:
    # the filters themselves: tests/unit/domain/test_sampling.py (filter_logits)
    engine = FakeRolloutEngine(seed=0)
    policy = FakePolicy(seed=0)
    with torch.no_grad():
        allowed = _first_token_logits(policy, PROMPTS[:1]).topk(3).indices[0].tolist()
    sampled = engine.generate(PROMPTS[:1], SamplingParams(n=200, top_k=3, max_new_tokens=1, seed=0))
    assert {c.token_ids[0] for c in sampled} <= set(allowed)


def test_sleep_wake_bookkeeping_and_round_trip() -> None:
    engine = FakeRolloutEngine(seed=0)
    sampling = SamplingParams(n=2, seed=4)
    before = engine.generate(PROMPTS, sampling)
    engine.sleep()
    assert not engine.is_awake
    with pytest.raises(RuntimeError, match="asleep"):
        engine.generate(PROMPTS, sampling)
    with pytest.raises(RuntimeError, match="asleep"):
        engine.load_weights([])
    engine.wake_up()
    assert engine.is_awake
    assert engine.generate(PROMPTS, sampling) == before
    assert (engine.sleeps, engine.wake_ups, engine.generate_calls) == (1, 1, 2)
    assert engine.requests == [(6, sampling), (6, sampling)]


def test_load_weights_checks_names_and_shapes() -> None:
    engine = FakeRolloutEngine(seed=0)
    with pytest.raises(KeyError, match="no weight"):
        engine.load_weights([("nope", torch.zeros(1))])
    with pytest.raises(ValueError, match="shape"):
        engine.load_weights([("head.bias", torch.zeros(3))])
    engine.load_weights([("head.bias", torch.full((16,), 7.0))])
    assert torch.equal(engine.named_parameters()["head.bias"], torch.full((16,), 7.0))
    assert engine.weight_syncs == 1
    assert engine.generate([], SamplingParams()) == []
