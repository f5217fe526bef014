"""LoRA in HfPolicy: only adapters train; merged sync weights and export equal base + delta."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from lightrft.adapters.hf import HfPolicy, LoraParams
from lightrft.adapters.hf.lora import LoraLayerInfo, merge_lora, merged_weights
from tests.unit.adapters.hf.hf_tiny import PROMPTS, RESPONSES, make_batch, tiny_model


def lora_policy(tie: bool = False, **kwargs: object) -> HfPolicy:
    params = LoraParams(rank=4, alpha=8.0, **kwargs)  # scaling = 8 / 4 = 2
    policy = HfPolicy(tiny_model(tie=tie), lora=params)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():  # B starts at 0; make the adapters matter
        for name, p in policy.module.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
    return policy


def test_all_linear_targets_every_linear_layer_but_the_head() -> None:
    policy = lora_policy()
    adapted = {
        n.split(".lora_A")[0].rsplit(".", 1)[-1]
        for n, _ in policy.module.named_parameters()
        if ".lora_A." in n
    }
    assert adapted == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    assert not any("lm_head.lora" in n for n, _ in policy.module.named_parameters())


def test_explicit_target_modules() -> None:
    policy = lora_policy(target_modules=("q_proj", "v_proj"))
    adapted = {
        n.split(".lora_A")[0].rsplit(".", 1)[-1]
        for n, _ in policy.module.named_parameters()
        if ".lora_A." in n
    }
    assert adapted == {"q_proj", "v_proj"}


def test_only_adapter_weights_get_gradients() -> None:
    policy = lora_policy()
    out = policy.forward(make_batch(PROMPTS, RESPONSES))
    out.logprobs.sum().backward()
    with_grad = {n for n, p in policy.module.named_parameters() if p.grad is not None}
    trainable = {n for n, p in policy.module.named_parameters() if p.requires_grad}
    assert with_grad == trainable
    assert with_grad and all(".lora_A." in n or ".lora_B." in n for n in with_grad)
    assert all(policy.module.get_parameter(n).grad.abs().sum() > 0 for n in with_grad)


def test_sync_weights_have_base_names_and_merged_values() -> None:
    policy = lora_policy()
    base_names = set(tiny_model().state_dict())
    state = list(policy.module.state_dict().items())
    synced = dict(policy.weights_for_sync(iter(state)))
    assert set(synced) == base_names
    # q_proj of layer 0 by hand: W + (alpha / r) * B @ A
    prefix = "base_model.model.model.layers.0.self_attn.q_proj"
    sd = dict(state)
    expected = sd[f"{prefix}.base_layer.weight"] + 2.0 * (
        sd[f"{prefix}.lora_B.default.weight"] @ sd[f"{prefix}.lora_A.default.weight"]
    )
    torch.testing.assert_close(synced["model.layers.0.self_attn.q_proj.weight"], expected)
    assert not torch.equal(expected, sd[f"{prefix}.base_layer.weight"])
    # untouched weights pass through
    assert torch.equal(synced["model.norm.weight"], sd["base_model.model.model.norm.weight"])


@pytest.mark.parametrize("tie", [False, True])
def test_export_reloads_to_the_same_logprobs(tmp_path: Path, tie: bool) -> None:
    policy = lora_policy(tie=tie)
    batch = make_batch(PROMPTS, RESPONSES)
    with torch.no_grad():
        expected = policy.forward(batch).logprobs
    out_dir = policy.export_hf(tmp_path / "export")
    reloaded = AutoModelForCausalLM.from_pretrained(out_dir, local_files_only=True)
    assert not any("lora" in n for n in reloaded.state_dict())
    with torch.no_grad():
        got = HfPolicy(reloaded).forward(batch).logprobs
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_merge_handles_fan_in_fan_out_and_low_precision() -> None:
    w = torch.randn(3, 5, dtype=torch.bfloat16)  # Conv1D layout: (in=3, out=5)
    a, b = torch.randn(2, 3), torch.randn(5, 2)  # A (r, in), B (out, r)
    merged = merge_lora(w, a, b, LoraLayerInfo(scaling=0.5, fan_in_fan_out=True))
    assert merged.dtype == torch.bfloat16
    expected = (w.float() + 0.5 * (b @ a).T).to(torch.bfloat16)
    assert torch.equal(merged, expected)


def test_incomplete_or_unsupported_lora_state_is_refused() -> None:
    layers = {"base_model.model.x": LoraLayerInfo(1.0, False)}
    partial = [("base_model.model.x.base_layer.weight", torch.zeros(2, 2))]
    with pytest.raises(ValueError, match="missing"):
        list(merged_weights(partial, layers, "default"))
    dora = [("base_model.model.x.lora_magnitude_vector.default.weight", torch.zeros(2))]
    with pytest.raises(ValueError, match="cannot merge"):
        list(merged_weights(dora, layers, "default"))


def test_lora_params_are_validated() -> None:
    with pytest.raises(ValueError, match="rank"):
        LoraParams(rank=0)
    with pytest.raises(ValueError, match="target_modules"):
        LoraParams(target_modules="q_proj")


def _adapters(policy: HfPolicy) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in policy.module.named_parameters() if ".lora_" in n}


def test_fresh_adapters_come_from_the_seed_not_the_global_stream() -> None:
    models = [tiny_model(), tiny_model(), tiny_model()]  # tiny_model seeds torch itself
    torch.manual_seed(5)
    first = _adapters(HfPolicy(models[0], lora=LoraParams(rank=4)))
    torch.rand(1000)  # a different global state, as another run or rank may have
    second = _adapters(HfPolicy(models[1], lora=LoraParams(rank=4)))
    assert first.keys() == second.keys() and first
    assert all(torch.equal(first[name], second[name]) for name in first)
    reseeded = _adapters(HfPolicy(models[2], lora=LoraParams(rank=4, init_seed=1)))
    a_names = [name for name in first if ".lora_A." in name]
    assert all(not torch.equal(first[name], reseeded[name]) for name in a_names)
    assert all(float(first[name].abs().sum()) == 0 for name in first if ".lora_B." in name)


def test_adding_adapters_does_not_move_the_global_stream() -> None:
    model = tiny_model()
    torch.manual_seed(3)
    untouched = torch.rand(4)
    torch.manual_seed(3)
    HfPolicy(model, lora=LoraParams(rank=4))
    assert torch.equal(torch.rand(4), untouched)


@pytest.mark.parametrize("gathered", [False, True])
def test_adapter_export_loads_with_peft_and_equals_the_merged_model(
    tmp_path: Path, gathered: bool
) -> None:
    from peft import PeftModel
    from safetensors.torch import load_file

    policy = lora_policy()
    state = {n: t.detach().clone() for n, t in policy.module.state_dict().items()}
    kwargs = {"state": state} if gathered else {}  # a sharded strategy passes the gathered state
    adapter_dir = policy.export_adapter(tmp_path / "adapter", **kwargs)
    merged_dir = policy.export_hf(tmp_path / "merged", **kwargs)
    assert adapter_dir is not None
    assert (adapter_dir / "adapter_config.json").is_file()
    saved = load_file(str(adapter_dir / "adapter_model.safetensors"))
    assert saved and all(".lora_A." in n or ".lora_B." in n for n in saved)  # no base weights
    ids = make_batch(PROMPTS, RESPONSES).input_ids
    with torch.no_grad():
        peft_logits = PeftModel.from_pretrained(tiny_model(), adapter_dir)(ids).logits
        merged = AutoModelForCausalLM.from_pretrained(merged_dir, local_files_only=True)
        merged_logits = merged(ids).logits
        base_logits = tiny_model()(ids).logits
    # W x + s B A x vs (W + s B A) x: equal up to float32 rounding
    torch.testing.assert_close(peft_logits, merged_logits, atol=1e-4, rtol=1e-4)
    assert float((peft_logits - base_logits).abs().max()) > 1e-3  # the adapter matters


def test_no_adapter_export_without_lora(tmp_path: Path) -> None:
    assert HfPolicy(tiny_model()).export_adapter(tmp_path / "adapter") is None
    assert not (tmp_path / "adapter").exists()
