"""One colocated cycle on real adapters: generate, train a LoRA step, sync, generate again."""

from __future__ import annotations

import torch

from lightrft.adapters.hf import HfPolicy, HfRolloutEngine, LoraParams
from lightrft.adapters.single_device import SingleDeviceStrategy
from lightrft.domain.types import OptimizerParams, PromptRecord, SamplingParams
from tests.unit.adapters.hf.hf_tiny import make_batch, tiny_model, tiny_tokenizer

CPU = torch.device("cpu")
PROMPTS = [PromptRecord("a", "", (5, 9, 12)), PromptRecord("b", "", (7, 8, 30, 31))]


def test_lora_step_then_sync_makes_the_engine_follow_the_policy() -> None:
    policy = HfPolicy(tiny_model(0), lora=LoraParams(rank=4, alpha=8.0))
    strategy = SingleDeviceStrategy(CPU, OptimizerParams(lr=0.05, max_grad_norm=None))
    strategy.prepare(policy.module)
    engine = HfRolloutEngine(tiny_model(0), tiny_tokenizer(), CPU, sleep_mode="discard")

    sampling = SamplingParams(n=2, temperature=1.0, max_new_tokens=6, seed=0)
    completions = engine.generate(PROMPTS, sampling)
    engine.sleep()
    batch = make_batch(
        [PROMPTS[c.prompt_index].prompt_token_ids for c in completions],
        [c.token_ids for c in completions],
    )
    with strategy.autocast():
        logprobs = policy.forward(batch).logprobs
    # untrained LoRA (B = 0): the policy equals the engine on the rollout tokens
    rollout = torch.zeros_like(logprobs)
    for i, c in enumerate(completions):
        rollout[i, : len(c.logprobs or ())] = torch.tensor(c.logprobs)
    torch.testing.assert_close(logprobs.detach(), rollout, atol=1e-5, rtol=1e-5)

    strategy.backward(-(logprobs * batch.response_mask).sum())  # raise their likelihood
    assert not strategy.step().skipped
    with torch.no_grad():
        trained = policy.forward(batch).logprobs
    assert (trained - logprobs.detach())[batch.response_mask].mean() > 0

    engine.wake_up()
    engine.load_weights(policy.weights_for_sync(strategy.full_state()))
    greedy = SamplingParams(temperature=0, max_new_tokens=5)
    synced = engine.generate(PROMPTS, greedy)
    replay = make_batch([p.prompt_token_ids for p in PROMPTS], [c.token_ids for c in synced])
    with torch.no_grad():
        expected = policy.forward(replay).logprobs
    for i, c in enumerate(synced):
        got = torch.tensor(c.logprobs)
        torch.testing.assert_close(got, expected[i, : len(c.token_ids)], atol=1e-5, rtol=1e-5)
