"""The HF engine on int8 rollout weights: a measured, small mismatch with the float policy that
the rollout/* metrics report and TIS weights correct; syncs re-quantize."""

from __future__ import annotations

import torch

from lightrft.adapters.hf import HfPolicy, HfRolloutEngine
from lightrft.adapters.hf.quantized_rollout import quantize_linears
from lightrft.domain.rollout_correction import (
    RolloutCorrection,
    correction_weights,
    mismatch_metrics,
)
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from tests.unit.adapters.hf.hf_tiny import make_batch, tiny_model, tiny_tokenizer

CPU = torch.device("cpu")
PROMPTS = [
    PromptRecord(uid=f"p{i}", prompt_text="", prompt_token_ids=(2, 40 + i, 50, 60))
    for i in range(3)
]
SAMPLING = SamplingParams(n=2, temperature=1.0, max_new_tokens=8, seed=4)


def quantized_engine(seed: int) -> HfRolloutEngine:
    model = tiny_model(seed, tie=True)
    targets = quantize_linears(model)
    return HfRolloutEngine(model, tiny_tokenizer(), CPU, quantized=targets)


def padded(completions: list[Completion], policy: HfPolicy) -> tuple[torch.Tensor, ...]:
    """(trainer, engine, mask) log-probs of each completion's tokens, each (B, R)."""
    batch = make_batch(
        [PROMPTS[c.prompt_index].prompt_token_ids for c in completions],
        [c.token_ids for c in completions],
    )
    with torch.no_grad():
        trainer = policy.forward(batch, temperature=1.0).logprobs  # [B, R]
    engine = torch.zeros_like(trainer)
    for row, c in enumerate(completions):
        engine[row, : len(c.logprobs)] = torch.tensor(c.logprobs)
    return trainer, engine, batch.response_mask.float()


def test_mismatch_is_small_reported_and_corrected() -> None:
    policy = HfPolicy(tiny_model(0, tie=True))
    engine = quantized_engine(1)  # other weights until the sync
    engine.load_weights(policy.weights_for_sync(policy.module.named_parameters()))
    out = engine.generate(PROMPTS, SAMPLING)
    trainer, rollout, mask = padded(out, policy)
    metrics = mismatch_metrics(trainer, rollout, mask)
    # int8 weights with bf16 activations: not the policy's log-probs, but close to them
    assert 0 < float(metrics["rollout/logp_diff_mean"]) < 0.05
    assert float(metrics["rollout/logp_diff_max"]) < 0.5
    weights = correction_weights(trainer, rollout, mask, RolloutCorrection(cap=1.0))
    assert (weights[mask.bool()] <= 1.0).all() and (weights[mask.bool()] < 1.0).any()


def test_a_sync_requantizes_to_the_new_weights() -> None:
    source = tiny_model(1, tie=True)
    synced = quantized_engine(0)
    synced.load_weights(source.named_parameters())
    direct = quantized_engine(1)
    a, b = synced.generate(PROMPTS, SAMPLING), direct.generate(PROMPTS, SAMPLING)
    assert [c.token_ids for c in a] == [c.token_ids for c in b]
    assert [c.logprobs for c in a] == [c.logprobs for c in b]
