"""Multi-turn episodes on the HF engine: the generated ids are the engine's, observations are
rendered by the chat template, and the policy's log-probs of the whole multi-turn row equal
the engine's on every generated token (token-in, token-out end to end)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from transformers import LlamaForCausalLM

from lightrft.adapters.hf import HfPolicy, HfRolloutEngine
from lightrft.adapters.hf.chat_turns import HfTurnRenderer
from lightrft.application.agent_rollout import AgentRolloutEngine
from lightrft.application.batching import build_rollout_tensors
from lightrft.application.params import AgentParams
from lightrft.domain.agent import ChatMessage
from lightrft.domain.types import PromptRecord, SamplingParams
from tests.helpers.agent_envs import NeverDoneEnvironment
from tests.helpers.threads import one_torch_thread
from tests.unit.adapters.hf.chat_templates import FAMILIES, family_tokenizer
from tests.unit.adapters.hf.hf_tiny import tiny_config

CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    yield from one_torch_thread()


@pytest.mark.parametrize("family", FAMILIES[:2], ids=lambda f: f.name)
def test_hf_multi_turn_rows_score_the_engine_log_probs_on_generated_tokens(family) -> None:  # type: ignore[no-untyped-def]
    tok = family_tokenizer(family)
    config = tiny_config()
    config.vocab_size = len(tok)
    config.eos_token_id = config.pad_token_id = tok.eos_token_id
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    renderer = HfTurnRenderer(tok)
    engine = HfRolloutEngine(model, tok, CPU)
    agent = AgentRolloutEngine(engine, NeverDoneEnvironment, renderer, AgentParams(max_turns=3))
    text = tok.apply_chat_template(
        [{"role": "user", "content": "What is 12 * 34?"}],
        add_generation_prompt=True,
        tokenize=False,
    )
    prompts = [
        PromptRecord(f"p{i}", str(text), tuple(tok.encode(str(text), add_special_tokens=False)))
        for i in range(2)
    ]
    sampling = SamplingParams(n=2, max_new_tokens=6, seed=7, stop_token_ids=tuple(range(60, 400)))
    completions = agent.generate(prompts, sampling)
    assert any(c.episode is not None and c.episode.turns > 1 for c in completions)
    for c in completions:
        assert c.episode is not None
        for before, segment in zip(c.episode.segments, c.episode.segments[1:], strict=False):
            if not segment.trained:
                assert segment.token_ids == renderer.observation_ids(
                    [ChatMessage("tool", "1")], before.token_ids
                )
    tensors = build_rollout_tensors(prompts, completions, tok.eos_token_id)
    policy_lp = HfPolicy(model).forward(tensors.sequences).logprobs
    mask = tensors.sequences.response_mask.bool()
    assert tensors.rollout_logprobs is not None
    torch.testing.assert_close(
        policy_lp[mask], tensors.rollout_logprobs[mask], atol=2e-4, rtol=1e-4
    )
    # same seed, other batching (one prompt at a time): the same episodes
    again = [agent.generate([p], sampling) for p in prompts]
    assert [c.token_ids for c in completions] == [c.token_ids for part in again for c in part]
