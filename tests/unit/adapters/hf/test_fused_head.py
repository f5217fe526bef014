"""The fused LM head (lightrft.adapters.hf.fused_head): the same log-probs, entropies and
gradients as the model's own forward + ``token_logprobs`` on every path that uses it
(padded, packed, prefix-shared, LoRA, gradient checkpointing), taken only when eligible."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import torch
from torch import nn
from transformers import (
    GemmaConfig,
    GemmaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    PreTrainedModel,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

from lightrft.adapters.fsdp import Fsdp2Strategy
from lightrft.adapters.hf import HfPolicy, HfReferenceModel, LoraParams
from lightrft.adapters.hf import fused_head as fh
from lightrft.adapters.hf.logprobs import logprobs_from_inputs, response_logprobs
from lightrft.adapters.hf.prefix_sharing import prefix_shared_logprobs
from lightrft.domain.ports import PolicyOutput
from lightrft.domain.types import OptimizerParams, SequenceBatch
from tests.unit.adapters.hf.hf_tiny import FAMILY_SIZES, make_batch, tiny_model


def _qwen2() -> PreTrainedModel:
    torch.manual_seed(2)
    return Qwen2ForCausalLM(Qwen2Config(**FAMILY_SIZES)).eval()


def _qwen3() -> PreTrainedModel:
    torch.manual_seed(3)
    return Qwen3ForCausalLM(Qwen3Config(**FAMILY_SIZES, head_dim=8)).eval()


def _mistral() -> PreTrainedModel:
    torch.manual_seed(4)
    return MistralForCausalLM(MistralConfig(**FAMILY_SIZES, sliding_window=None)).eval()


def _gemma() -> PreTrainedModel:
    torch.manual_seed(5)  # tied head, embeddings scaled by sqrt(hidden) inside the decoder
    return GemmaForCausalLM(GemmaConfig(**FAMILY_SIZES, head_dim=8)).eval()


MODELS: dict[str, Callable[[], PreTrainedModel]] = {
    "gemma": _gemma,
    "llama": lambda: tiny_model(1),
    "llama-tied": lambda: tiny_model(2, tie=True),
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "mistral": _mistral,
}
PROMPTS = [[5, 6, 7, 8], [9, 10], [11, 12, 13], [5, 6, 7, 8]]
RESPONSES = [[20, 21, 22], [23], [24, 25, 26, 27, 28], [29, 30]]

Forward = Callable[[nn.Module, SequenceBatch, bool], PolicyOutput]


def batch_with_hole() -> SequenceBatch:
    """Left-padded prompts, right-padded responses, one unscored token inside a response."""
    batch = make_batch(PROMPTS, RESPONSES)
    mask = batch.response_mask.clone()
    mask[2, 1] = False
    return SequenceBatch(batch.input_ids, batch.attention_mask, mask)


def mode(fused: bool) -> fh.FusedHeadMode:
    return "on" if fused else "off"


def padded(m: nn.Module, b: SequenceBatch, fused: bool) -> PolicyOutput:
    return response_logprobs(m, b, temperature=0.7, with_entropy=True, fused_head=mode(fused))


def packed(m: nn.Module, b: SequenceBatch, fused: bool) -> PolicyOutput:
    return response_logprobs(
        m, b, temperature=0.7, with_entropy=True, packing=True, chunk_size=3, fused_head=mode(fused)
    )


def shared(m: nn.Module, b: SequenceBatch, fused: bool) -> PolicyOutput:
    return prefix_shared_logprobs(m, b, temperature=1.3, with_entropy=True, fused_head=mode(fused))


PATHS: dict[str, Forward] = {"padded": padded, "packed": packed, "prefix_shared": shared}


@contextmanager
def head_calls(model: nn.Module) -> Iterator[list[int]]:
    """Counts calls of the model's LM head module (without a hook, which would disable the
    fused path) by wrapping its forward."""
    head = fh.unwrap_peft(model).get_output_embeddings()
    calls: list[int] = []
    original = head.forward

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    head.forward = counting
    try:
        yield calls
    finally:
        del head.forward


def run(model: nn.Module, batch: SequenceBatch, forward: Forward, fused: bool) -> tuple[Any, ...]:
    """Outputs, gradient of a loss on log-probs and entropy, and whether the head ran."""
    model.zero_grad(set_to_none=True)
    with head_calls(model) as calls:
        out = forward(model, batch, fused)
    assert out.entropy is not None
    weights = torch.linspace(-1.0, 2.0, out.logprobs.numel()).reshape(out.logprobs.shape)
    (out.logprobs * weights).sum().add(0.3 * (out.entropy * weights.flip(0)).sum()).backward()
    grads = [p.grad.flatten() for p in model.parameters() if p.requires_grad]
    assert all(g is not None for g in grads)
    return out.logprobs.detach(), out.entropy.detach(), torch.cat(grads), bool(calls)


def assert_fused_equals_unfused(model: nn.Module, batch: SequenceBatch, forward: Forward) -> None:
    lp, ent, grad, head_ran = run(model, batch, forward, fused=True)
    ref_lp, ref_ent, ref_grad, ref_head_ran = run(model, batch, forward, fused=False)
    assert ref_head_ran and not head_ran, "the fused path must not run the LM head module"
    torch.testing.assert_close(lp, ref_lp, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ent, ref_ent, atol=1e-5, rtol=1e-5)
    scale = float(ref_grad.abs().max())
    assert scale > 0
    torch.testing.assert_close(grad, ref_grad, atol=1e-5 * scale, rtol=1e-5)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("name", sorted(MODELS))
def test_values_and_gradients_equal_the_unfused_path(name: str, path: str) -> None:
    assert_fused_equals_unfused(MODELS[name](), batch_with_hole(), PATHS[path])


def test_lora_adapters_stay_active() -> None:
    policy = HfPolicy(tiny_model(3), lora=LoraParams(rank=4, alpha=8))
    with torch.no_grad():  # B = 0 at init: give the adapters an effect
        for name, param in policy.module.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.2)
    batch = batch_with_hole()
    plain = response_logprobs(tiny_model(3), batch).logprobs
    assert not torch.allclose(policy.forward(batch).logprobs, plain, atol=1e-3)
    assert fh.fused_head_problem(policy.module, {"input_ids": batch.input_ids}) is None
    assert_fused_equals_unfused(policy.module, batch, padded)


def test_gradient_checkpointing_in_train_mode() -> None:
    model = tiny_model(4)
    model.gradient_checkpointing_enable()
    assert_fused_equals_unfused(model.train(), batch_with_hole(), packed)


def test_policy_and_reference_option_chooses_the_path() -> None:
    batch = batch_with_hole()
    outputs = []
    for fused in (True, False):
        model = tiny_model(5)
        with head_calls(model) as calls:
            outputs.append(HfPolicy(model, fused_head=mode(fused)).forward(batch).logprobs.detach())
            reference = HfReferenceModel(model, torch.device("cpu"), fused_head=mode(fused))
            outputs.append(reference.forward(batch).logprobs)
        assert bool(calls) is not fused
    torch.testing.assert_close(outputs[0], outputs[2], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(outputs[1], outputs[3], atol=1e-5, rtol=1e-5)


def test_a_batch_without_scored_tokens_gives_zeros() -> None:
    batch = make_batch(PROMPTS, RESPONSES)
    batch = SequenceBatch(batch.input_ids, batch.attention_mask, batch.response_mask & False)
    for forward in (padded, packed):
        out = forward(tiny_model(), batch, True)
        assert out.entropy is not None
        assert not out.logprobs.any() and not out.entropy.any()


# ---- eligibility ----------------------------------------------------------------------


TEXT = {"input_ids": torch.zeros(1, 2, dtype=torch.long), "attention_mask": None}


def test_eligible_families() -> None:
    for make in MODELS.values():
        assert fh.fused_head_problem(make(), TEXT) is None


def test_media_inputs_are_refused() -> None:
    problem = fh.fused_head_problem(tiny_model(), {**TEXT, "pixel_values": torch.zeros(1)})
    assert problem is not None and "pixel_values" in problem


def test_unknown_family_and_logit_scaling_are_refused() -> None:
    model = tiny_model()
    model.config.model_type = "gemma2"
    problem = fh.fused_head_problem(model, TEXT)
    assert problem is not None and "gemma2" in problem
    model = tiny_model()
    model.config.final_logit_softcapping = 30.0  # Gemma 2 / 3
    problem = fh.fused_head_problem(model, TEXT)
    assert problem is not None and "final_logit_softcapping" in problem


def test_a_lora_wrapped_head_is_refused() -> None:
    policy = HfPolicy(tiny_model(), lora=LoraParams(rank=2, target_modules=("lm_head",)))
    problem = fh.fused_head_problem(policy.module, TEXT)
    assert problem is not None and "nn.Linear" in problem


def test_hooks_on_the_head_or_model_keep_the_unfused_path() -> None:
    model = tiny_model()
    seen: list[int] = []
    handle = model.lm_head.register_forward_hook(lambda m, i, o: seen.append(1))
    problem = fh.fused_head_problem(model, TEXT)
    assert problem is not None and "LM head has forward hooks" in problem
    response_logprobs(model, batch_with_hole())
    assert seen == [1]
    handle.remove()
    model.register_forward_pre_hook(lambda m, a: None)
    problem = fh.fused_head_problem(model, TEXT)
    assert problem is not None and "model has forward hooks" in problem


def test_zero3_partitioned_head_is_refused() -> None:
    model = tiny_model()
    model.lm_head.weight.ds_id = 7  # what DeepSpeed ZeRO-3 sets on partitioned parameters
    problem = fh.fused_head_problem(model, TEXT)
    assert problem is not None and "sharded" in problem


def test_fsdp2_falls_back_and_still_agrees(one_rank_group: None) -> None:
    model = tiny_model(6)
    Fsdp2Strategy(OptimizerParams(lr=1e-3), device=torch.device("cpu")).prepare(model)
    assert fh.fused_head_problem(model, TEXT) is not None
    batch = batch_with_hole()
    on = response_logprobs(model, batch, fused_head="on").logprobs
    off = response_logprobs(model, batch, fused_head="off").logprobs
    torch.testing.assert_close(on, off, atol=0.0, rtol=0.0)


def test_suppressed_tokens_keep_the_unfused_path() -> None:
    model = tiny_model()
    batch = batch_with_hole()
    inputs = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask}
    with head_calls(model) as calls:
        out = logprobs_from_inputs(model, batch, inputs, suppressed=torch.tensor([3, 4]))
    assert calls and out.logprobs.shape == batch.response_mask.shape


@pytest.mark.parametrize("precision", ["bf16", "autocast"])
def test_half_precision_logprobs_are_equal_and_gradients_close(precision: str) -> None:
    # the head's matmul runs in bf16 on both paths; the fused path sums the weight gradient
    # over chunks in float32, the unfused one in a single bf16 matmul
    model = tiny_model(7) if precision == "autocast" else tiny_model(7).to(torch.bfloat16)
    batch = batch_with_hole()

    def forward(m: nn.Module, b: SequenceBatch, fused: bool) -> PolicyOutput:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "autocast"):
            return response_logprobs(m, b, with_entropy=True, chunk_size=4, fused_head=mode(fused))

    lp, ent, grad, _ = run(model, batch, forward, fused=True)
    ref_lp, ref_ent, ref_grad, _ = run(model, batch, forward, fused=False)
    torch.testing.assert_close(lp, ref_lp, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ent, ref_ent, atol=1e-5, rtol=1e-5)
    scale = float(ref_grad.abs().max())
    torch.testing.assert_close(grad.float(), ref_grad.float(), atol=4e-3 * scale, rtol=2e-2)


def test_a_model_that_is_not_a_causal_lm_is_refused() -> None:
    model = tiny_model()
    problem = fh.fused_head_problem(model.model, TEXT)  # the decoder alone (LlamaModel)
    assert problem is not None and "ForCausalLM" in problem


def test_auto_fuses_only_logits_of_at_least_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    model, batch = tiny_model(), batch_with_hole()

    def auto(m: nn.Module, b: SequenceBatch, fused: bool) -> PolicyOutput:
        return response_logprobs(m, b, with_entropy=True, fused_head="auto")

    rows = batch.input_ids.shape[0] * batch.response_length  # the padded path's logit rows
    vocab = model.get_output_embeddings().out_features
    monkeypatch.setattr(fh, "AUTO_MIN_LOGITS_BYTES", rows * vocab * 4 + 1)
    *_, head_ran = run(model, batch, auto, fused=False)
    assert head_ran  # just below the threshold: the unfused path
    monkeypatch.setattr(fh, "AUTO_MIN_LOGITS_BYTES", rows * vocab * 4)
    *_, head_ran = run(model, batch, auto, fused=False)
    assert not head_ran  # at the threshold: fused
