"""The HF engine keeps each episode's KV cache between its turns: the next turn prefills only
the new tokens, samples what re-prefilling the whole context samples (same tokens, log-probs
within 1e-5), never reads a cache computed with other weights, holds a bounded number of
episodes and releases them when the episodes end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from transformers import LlamaForCausalLM

from lightrft.adapters.hf import HfRolloutEngine
from lightrft.adapters.hf.chat_turns import HfTurnRenderer
from lightrft.adapters.hf.episode_cache import EpisodeKvStore, HeldCache
from lightrft.application.agent_rollout import AgentRolloutEngine
from lightrft.application.params import AgentParams
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from tests.helpers.agent_envs import NeverDoneEnvironment
from tests.helpers.threads import one_torch_thread
from tests.unit.adapters.hf.chat_templates import FAMILIES, family_tokenizer
from tests.unit.adapters.hf.hf_tiny import tiny_config

CPU = torch.device("cpu")
FAMILY = FAMILIES[1]  # qwen2.5
SAMPLING = SamplingParams(n=1, max_new_tokens=5, seed=11, stop_token_ids=tuple(range(60, 400)))


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    yield from one_torch_thread()


def model_and_tokenizer(seed: int = 0):  # type: ignore[no-untyped-def]
    tok = family_tokenizer(FAMILY)
    config = tiny_config()
    config.vocab_size = len(tok)
    config.eos_token_id = config.pad_token_id = tok.eos_token_id
    torch.manual_seed(seed)
    return LlamaForCausalLM(config).eval(), tok


def engines(cache_size: int = 8) -> tuple[HfRolloutEngine, HfRolloutEngine, object]:
    model, tok = model_and_tokenizer()
    cached = HfRolloutEngine(model, tok, CPU, episode_cache_size=cache_size)
    plain = HfRolloutEngine(model, tok, CPU)
    return cached, plain, tok


def prompts(tok, count: int = 3) -> list[PromptRecord]:  # type: ignore[no-untyped-def]
    records = []
    for i in range(count):
        text = tok.apply_chat_template(
            [{"role": "user", "content": f"What is {i + 12} * 34?"}],
            add_generation_prompt=True,
            tokenize=False,
        )
        ids = tuple(tok.encode(str(text), add_special_tokens=False))
        records.append(PromptRecord(f"p{i}", str(text), ids))
    return records


def same_completions(got: list[Completion], want: list[Completion]) -> None:
    assert [c.token_ids for c in got] == [c.token_ids for c in want]
    for a, b in zip(got, want, strict=True):
        assert a.logprobs is not None and b.logprobs is not None
        torch.testing.assert_close(
            torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-5, rtol=0
        )


def next_turn(prompt: PromptRecord, turn: Completion, observation: tuple[int, ...]) -> PromptRecord:
    ids = prompt.prompt_token_ids + turn.token_ids + observation
    return PromptRecord(prompt.uid + "+", prompt.prompt_text, ids)


def test_three_turns_reuse_the_cache_and_sample_what_a_full_prefill_samples() -> None:
    cached, plain, tok = engines()
    observation = tuple(
        tok.encode(
            "<|im_end|>\n<|im_start|>user\n408<|im_end|>\n<|im_start|>assistant\n",
            add_special_tokens=False,
        )
    )
    inputs = prompts(tok)
    handles = [f"e{i}" for i in range(len(inputs))]
    store = cached.episode_caches
    assert store is not None
    expected_prefill = expected_reused = 0
    stopped = [False] * len(inputs)
    for _turn in range(3):
        for p, held in zip(inputs, stopped, strict=True):  # a stopped turn left its cache
            new = len(observation) + 1 if held else len(p.prompt_token_ids)
            expected_prefill += new
            expected_reused += len(p.prompt_token_ids) - new
        got = cached.generate_turns(inputs, SAMPLING, handles)
        same_completions(got, plain.generate(inputs, SAMPLING))
        assert store.stats.prefill_tokens == expected_prefill
        assert store.stats.reused_tokens == expected_reused
        stopped = [c.finish_reason == "stop" for c in got]
        inputs = [next_turn(p, c, observation) for p, c in zip(inputs, got, strict=True)]
    assert store.stats.hits >= 2  # the cache was used


def test_agent_rollout_with_the_cache_gives_the_same_episodes_and_releases_them() -> None:
    cached, plain, tok = engines()
    params = AgentParams(max_turns=3)
    renderer = HfTurnRenderer(tok)
    inputs = prompts(tok, 2)
    sampling = SamplingParams(n=2, max_new_tokens=5, seed=7, stop_token_ids=tuple(range(60, 400)))
    with_cache = AgentRolloutEngine(cached, NeverDoneEnvironment, renderer, params)
    without = AgentRolloutEngine(plain, NeverDoneEnvironment, renderer, params)
    got, want = with_cache.generate(inputs, sampling), without.generate(inputs, sampling)
    same_completions(got, want)
    assert any(c.episode is not None and c.episode.turns == 3 for c in got)
    store = cached.episode_caches
    assert store is not None and store.stats.hits > 0
    assert len(store) == 0  # released at the episodes' end
    assert store.stats.released > 0


def test_a_weight_sync_makes_held_caches_unreadable() -> None:
    """A cache computed with the old weights would give the old model's keys and values for
    the context: after load_weights the next turn must equal a fresh engine's on the new
    weights (it re-prefills the whole context)."""
    cached, _, tok = engines()
    inputs = prompts(tok, 2)
    handles = ["a", "b"]
    first = cached.generate_turns(inputs, SAMPLING, handles)
    assert len(cached.episode_caches or ()) > 0
    new_model, _ = model_and_tokenizer(seed=1)
    cached.load_weights(list(new_model.named_parameters()))
    assert len(cached.episode_caches or ()) == 0
    observation = tuple(tok.encode("<|im_start|>user\n1<|im_end|>\n", add_special_tokens=False))
    second = [next_turn(p, c, observation) for p, c in zip(inputs, first, strict=True)]
    got = cached.generate_turns(second, SAMPLING, handles)
    want = HfRolloutEngine(new_model, tok, CPU).generate(second, SAMPLING)
    same_completions(got, want)
    store = cached.episode_caches
    assert store is not None and store.stats.hits == 0


def test_a_cache_of_another_weight_version_is_refused_and_counted() -> None:
    store = EpisodeKvStore(capacity=4)
    layer = (torch.zeros(1, 2, 3), torch.zeros(1, 2, 3))
    store.keep("e", HeldCache((1, 2), (layer,), version=3))
    assert store.lookup("e", (1, 2, 5), version=4) is None
    assert store.stats.stale == 1 and len(store) == 0
    store.keep("e", HeldCache((1, 2), (layer,), version=4))
    assert store.lookup("e", (1, 2), version=4) is None  # nothing new to prefill
    assert store.lookup("e", (1, 3, 5), version=4) is None  # not a continuation
    assert store.lookup("e", (1, 2, 5), version=4) is not None
    assert (store.stats.hits, store.stats.misses) == (1, 3)


def test_the_store_is_bounded_and_counts_evictions() -> None:
    cached, plain, tok = engines(cache_size=2)
    inputs = prompts(tok, 3)
    handles = ["a", "b", "c"]
    first = cached.generate_turns(inputs, SAMPLING, handles)
    store = cached.episode_caches
    assert store is not None
    held = sum(c.finish_reason == "stop" for c in first)
    assert len(store) == min(held, 2)
    assert store.stats.evicted == max(held - 2, 0)
    observation = tuple(tok.encode("<|im_start|>user\n1<|im_end|>\n", add_special_tokens=False))
    second = [next_turn(p, c, observation) for p, c in zip(inputs, first, strict=True)]
    same_completions(
        cached.generate_turns(second, SAMPLING, handles), plain.generate(second, SAMPLING)
    )
    with pytest.raises(ValueError, match="capacity must be >= 1"):
        EpisodeKvStore(capacity=0)


def test_generate_turns_checks_its_arguments() -> None:
    cached, _, tok = engines()
    with pytest.raises(ValueError, match="1 episode handles for 2 prompts"):
        cached.generate_turns(prompts(tok, 2), SAMPLING, ["a"])
    with pytest.raises(ValueError, match="one turn per episode; got n=2"):
        cached.generate_turns(prompts(tok, 1), SamplingParams(n=2, max_new_tokens=2), ["a"])
