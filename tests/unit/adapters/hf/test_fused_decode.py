"""FusedDecoder: its decode steps give transformers' logits step by step (left padding, GQA,
biases, rows dropped, weights changed in place), the engine generates the same greedy
tokens with it, and unsupported models or settings fall back with the reason."""

from __future__ import annotations

import pytest
import structlog
import torch
from structlog.testing import capture_logs
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    PreTrainedModel,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)
from transformers.models.llama.modeling_llama import LlamaRMSNorm

from lightrft.adapters.hf import HfRolloutEngine
from lightrft.adapters.hf.fused_decode import FusedDecoder, fused_decode_supported
from lightrft.adapters.hf.logprobs import position_ids_from_mask
from lightrft.adapters.hf.preallocated_cache import preallocated_cache
from lightrft.adapters.hf.quantized_rollout import quantize_linears
from lightrft.domain.types import PromptRecord, SamplingParams
from tests.unit.adapters.hf.hf_tiny import FAMILY_SIZES, PAD, tiny_model, tiny_tokenizer

CPU = torch.device("cpu")
pytestmark = pytest.mark.skipif(
    fused_decode_supported(tiny_model(), CPU) is not None, reason="no oneDNN packing ops"
)


def _with_random_biases(model: PreTrainedModel) -> PreTrainedModel:
    """Biases are initialized to zero: make them matter."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.Linear) and module.bias is not None:
                module.bias.normal_(0.0, 0.3)
    return model


def _llama_biased() -> PreTrainedModel:
    torch.manual_seed(1)
    config = LlamaConfig(
        **FAMILY_SIZES, attention_bias=True, mlp_bias=True, tie_word_embeddings=True
    )
    return _with_random_biases(LlamaForCausalLM(config).eval())


def _qwen2() -> PreTrainedModel:
    torch.manual_seed(2)
    config = Qwen2Config(**FAMILY_SIZES, rope_scaling={"rope_type": "linear", "factor": 2.0})
    return _with_random_biases(Qwen2ForCausalLM(config).eval())


def _mistral() -> PreTrainedModel:
    torch.manual_seed(3)
    return MistralForCausalLM(MistralConfig(**FAMILY_SIZES, sliding_window=None)).eval()


MODELS = {
    "llama": lambda: tiny_model(tie=True),
    "llama-biased": _llama_biased,
    "qwen2": _qwen2,
    "mistral": _mistral,
}
PROMPTS = [[5, 6, 7, 8, 9, 10], [11, 12], [13, 14, 15, 16]]  # left-padded to 6


def _left_pad(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), PAD)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, width - len(row) :], mask[i, width - len(row) :] = torch.tensor(row), 1
    return ids, mask


def _compare_steps(model: PreTrainedModel, steps: int, drop_at: int | None = None) -> None:
    """Prefills two caches with transformers, then decodes greedily with the model's forward
    on one and the fused step on the other, comparing logits at every step."""
    ids, mask = _left_pad(PROMPTS)
    positions = position_ids_from_mask(mask)
    caches = [preallocated_cache(model.config, ids.shape[1] + steps) for _ in range(2)]
    fused = FusedDecoder(model)
    with torch.no_grad():
        for cache in caches:
            logits = model(
                input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache
            ).logits[:, -1]
        position = positions[:, -1:]
        with fused.active(rows=len(PROMPTS)):
            for step in range(steps):
                token = logits.argmax(-1)[:, None]
                mask = torch.cat([mask, torch.ones_like(token)], dim=1)
                position = position + 1
                logits = model(
                    input_ids=token,
                    attention_mask=mask,
                    position_ids=position,
                    past_key_values=caches[0],
                ).logits[:, -1]
                got = fused.step(token, mask, position, caches[1])
                scale = float(logits.abs().max())
                torch.testing.assert_close(got, logits, atol=1e-4 * scale, rtol=0)
                if step == drop_at:  # rows finished: the engine drops them from the cache
                    keep = torch.tensor([0, 2])
                    for cache in caches:
                        cache.reorder_cache(keep)
                    mask, position, logits = mask[keep], position[keep], logits[keep]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fused_steps_give_the_models_logits(name: str) -> None:
    _compare_steps(MODELS[name](), steps=6)


def test_fused_steps_after_rows_are_dropped() -> None:
    _compare_steps(_qwen2(), steps=6, drop_at=2)


def test_rms_norm_matches_llamas_float32_math() -> None:
    norm = LlamaRMSNorm(32, eps=1e-6)
    with torch.no_grad():
        norm.weight.normal_()
    x = torch.randn(5, 32) * 3
    fused = torch.nn.functional.rms_norm(x, (32,), norm.weight, norm.variance_epsilon)
    torch.testing.assert_close(fused, norm(x), atol=1e-6, rtol=1e-6)


def test_weights_changed_in_place_are_packed_again() -> None:
    model = tiny_model()
    fused = FusedDecoder(model)
    with fused.active(rows=3):
        pass
    first = fused.packs
    assert first == 4 * model.config.num_hidden_layers + 1  # qkv, o, gate_up, down + head
    with fused.active(rows=3):
        pass
    assert fused.packs == first
    with torch.no_grad():
        model.model.layers[1].self_attn.k_proj.weight.mul_(1.5)  # as an optimizer step
        model.lm_head.weight.add_(0.1)
    with fused.active(rows=3):
        pass
    assert fused.packs == first + 2  # that layer's qkv and the head
    _compare_steps(model, steps=3)  # and the values follow the new weights
    fused.release()
    with fused.active(rows=3):
        pass
    assert fused.packs == 2 * first + 2


def test_step_outside_active_is_refused() -> None:
    model = tiny_model()
    with pytest.raises(RuntimeError, match="inside"):
        FusedDecoder(model).step(
            torch.ones(1, 1, dtype=torch.long), torch.ones(1, 1), torch.zeros(1, 1), None
        )  # type: ignore[arg-type]


def _prompts() -> list[PromptRecord]:
    return [
        PromptRecord(uid=f"p{i}", prompt_text="", prompt_token_ids=tuple(ids))
        for i, ids in enumerate([[5, 6, 7], [8, 9, 10, 11, 12], [13]])
    ]


@pytest.mark.parametrize("name", ["llama", "qwen2"])
def test_the_engine_generates_the_same_greedy_tokens(name: str) -> None:
    sampling = SamplingParams(n=2, max_new_tokens=12, temperature=0.0, seed=0)
    outputs = {}
    for on in (False, True):
        engine = HfRolloutEngine(
            MODELS[name](), tiny_tokenizer(), CPU, fused_decode="on" if on else "off"
        )
        assert (engine._fused is not None) is on
        outputs[on] = [c.token_ids for c in engine.generate(_prompts(), sampling)]
    assert outputs[True] == outputs[False]
    assert max(len(ids) for ids in outputs[True]) > 3


def test_fused_supersedes_packed_linears_and_a_shared_engine_releases_its_copies() -> None:
    engine = HfRolloutEngine(
        tiny_model(),
        tiny_tokenizer(),
        CPU,
        shares_policy_weights=True,
        packed_linears=True,
        fused_decode="on",
    )
    assert engine._packed is None and engine._fused is not None
    engine.generate(_prompts(), SamplingParams(n=1, max_new_tokens=3, temperature=0.0))
    assert engine._fused.packs > 0 and not engine._fused._packed


@pytest.mark.parametrize("fused", [True, False])
def test_an_own_weights_engine_keeps_its_copies_between_calls_and_drops_them_asleep(
    fused: bool,
) -> None:
    engine = HfRolloutEngine(
        tiny_model(),
        tiny_tokenizer(),
        CPU,
        packed_linears=not fused,
        fused_decode="on" if fused else "off",
    )
    packer = engine._fused if fused else engine._packed
    assert packer is not None
    greedy = SamplingParams(n=1, max_new_tokens=3, temperature=0.0)
    first = engine.generate(_prompts(), greedy)
    packs = packer.packs
    assert packer._packed and packs > 0
    assert engine.generate(_prompts(), greedy) == first and packer.packs == packs  # kept
    engine.sleep()
    assert not packer._packed  # the trainer gets the memory back
    engine.wake_up()
    assert engine.generate(_prompts(), greedy) == first and packer.packs == 2 * packs


def _with_q_norm() -> PreTrainedModel:
    model = tiny_model()
    model.model.layers[1].self_attn.q_norm = LlamaRMSNorm(16)
    return model


def _qwen3() -> PreTrainedModel:
    return Qwen3ForCausalLM(Qwen3Config(**FAMILY_SIZES, head_dim=8)).eval()


def _mistral_window() -> PreTrainedModel:
    return MistralForCausalLM(MistralConfig(**FAMILY_SIZES, sliding_window=4)).eval()


UNSUPPORTED = {
    "q_norm": (_with_q_norm, "layer 1: self_attn has q_norm"),
    "qwen3": (_qwen3, "model_type 'qwen3'"),
    "bf16": (lambda: tiny_model().to(torch.bfloat16), "bfloat16, not float32"),
    "sliding": (_mistral_window, "sliding_window 4"),
    "int8": (lambda: _quantized(tiny_model()), "not a plain nn.Linear"),
}


def _quantized(model: PreTrainedModel) -> PreTrainedModel:
    quantize_linears(model)
    return model


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_models_fall_back_with_the_reason(name: str) -> None:
    build, reason = UNSUPPORTED[name]
    model = build()
    assert reason in (fused_decode_supported(model, CPU) or "")
    with pytest.raises(ValueError, match="does not support"):
        FusedDecoder(model)
    structlog.reset_defaults()  # an earlier test may have configured a WARNING level
    for switch, event, level in (
        ("on", "rollout.fused_decode_unavailable", "warning"),
        ("auto", "rollout.fused_decode_off", "info"),
    ):
        with capture_logs() as logs:
            engine = HfRolloutEngine(model, tiny_tokenizer(), CPU, fused_decode=switch)
        assert engine._fused is None
        assert [(e["event"], e["log_level"]) for e in logs] == [(event, level)]
        assert reason in logs[0]["reason"]


def test_engine_settings_rule_it_out_and_cuda_is_refused() -> None:
    with capture_logs() as logs:
        engine = HfRolloutEngine(
            tiny_model(), tiny_tokenizer(), CPU, compile_decode=True, fused_decode="on"
        )
    assert engine._fused is None and logs[0]["reason"] == "compile_decode is on"
    with capture_logs() as logs:
        engine = HfRolloutEngine(tiny_model(), tiny_tokenizer(), CPU, fused_decode="auto")
    assert engine._fused is not None and logs == []
    assert "CPU only" in (fused_decode_supported(tiny_model(), torch.device("cuda")) or "")
