"""Multi-turn episodes on the vLLM CPU engine (skipped without vLLM): token-in (each turn's
input is the previous ids, prefix cache on), token-out (the policy's log-probs of the
multi-turn row equal vLLM's on every generated token; observations are masked)."""

from __future__ import annotations

import torch

from lightrft.adapters.hf import HfPolicy
from lightrft.adapters.hf.chat_turns import HfTurnRenderer
from lightrft.application.agent_rollout import AgentRolloutEngine
from lightrft.application.batching import build_rollout_tensors
from lightrft.application.params import AgentParams
from lightrft.domain.agent import ChatMessage
from lightrft.domain.types import PromptRecord, SamplingParams
from tests.helpers.agent_envs import NeverDoneEnvironment
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer
from tests.unit.adapters.vllm.vllm_tiny import shared_engine, tiny_vllm_model


def test_vllm_multi_turn_rows_are_token_exact() -> None:
    engine, _ = shared_engine()
    tok = tiny_tokenizer()
    renderer = HfTurnRenderer(tok)
    agent = AgentRolloutEngine(engine, NeverDoneEnvironment, renderer, AgentParams(max_turns=3))
    text = str(
        tok.apply_chat_template(
            [{"role": "user", "content": "2+2?"}], tokenize=False, add_generation_prompt=True
        )
    )
    ids = tuple(tok.encode(text, add_special_tokens=False))
    prompts = [PromptRecord(f"v{i}", text, ids) for i in range(2)]
    # every byte from 'a' on stops a turn: short turns, several per episode
    sampling = SamplingParams(n=2, max_new_tokens=5, seed=11, stop_token_ids=tuple(range(100, 259)))
    completions = agent.generate(prompts, sampling)
    assert any(c.episode is not None and c.episode.turns > 1 for c in completions)
    for c in completions:
        assert c.episode is not None and c.loss_mask is not None
        segments = c.episode.segments
        for before, obs in zip(segments, segments[1:], strict=False):
            if not obs.trained:
                assert obs.token_ids == renderer.observation_ids(
                    [ChatMessage("tool", "1")], before.token_ids
                )
    tensors = build_rollout_tensors(prompts, completions, 0)
    mask = tensors.sequences.response_mask.bool()
    with torch.no_grad():
        policy = HfPolicy(tiny_vllm_model(0)).forward(tensors.sequences).logprobs
    assert tensors.rollout_logprobs is not None
    torch.testing.assert_close(policy[mask], tensors.rollout_logprobs[mask], atol=1e-3, rtol=0)
    # the same episodes one prompt at a time: vLLM seeds each turn by its request
    alone = agent.generate([prompts[1]], sampling)
    assert [c.token_ids for c in alone] == [c.token_ids for c in completions[2:]]
