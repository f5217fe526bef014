"""``Fsdp2Strategy`` pieces checked in this process, on a one-rank gloo group."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from torch.distributed.tensor import DTensor

from lightrft.adapters.accelerators import CudaAccelerator
from lightrft.adapters.distributed import init_process_group_from_env, shutdown_process_group
from lightrft.adapters.fsdp import Fsdp2Strategy, clean_name, layer_class_names, transformer_blocks
from lightrft.domain.aggregation import LossNormalizer
from lightrft.domain.ports import Strategy
from tests.unit.adapters.fsdp.fsdp_case import OPTIM, global_batch, nll_loss, tiny_model

HOST = torch.device("cpu")


def train_step(strategy: Fsdp2Strategy, step: int, device: torch.device = HOST) -> None:
    input_ids, mask = (t.to(device) for t in global_batch(step))
    strategy.backward(nll_loss(strategy.module, input_ids, mask, LossNormalizer.from_mask(mask)))
    strategy.step()


def params(strategy: Fsdp2Strategy) -> dict[str, torch.Tensor]:
    return {name: tensor.clone() for name, tensor in strategy.full_state()}


# --- which blocks are sharded ---------------------------------------------------------


def test_layer_classes_come_from_the_hf_no_split_modules() -> None:
    model = tiny_model()
    assert layer_class_names(model) == ("LlamaDecoderLayer",)
    wrapper = nn.ModuleDict({"backbone": model, "head": nn.Linear(32, 1)})  # e.g. a critic
    assert layer_class_names(wrapper) == ("LlamaDecoderLayer",)
    assert layer_class_names(model, ["LlamaMLP"]) == ("LlamaMLP",)


def test_a_module_without_no_split_modules_needs_layer_classes() -> None:
    with pytest.raises(ValueError, match="layer_classes"):
        layer_class_names(nn.Sequential(nn.Linear(2, 2)))


def test_blocks_are_the_outermost_matches_in_order() -> None:
    model = tiny_model()
    blocks = transformer_blocks(model, ["LlamaDecoderLayer", "LlamaMLP"])  # MLPs are inside
    assert blocks == [model.model.layers[0], model.model.layers[1]]
    assert transformer_blocks(model, []) == []
    with pytest.raises(ValueError, match="LlamaBlock"):
        transformer_blocks(model, ["LlamaBlock"])  # a typo must not pass silently


def test_clean_name_strips_wrapper_segments() -> None:
    name = "_orig_mod.model.layers.0._checkpoint_wrapped_module.mlp.up_proj.weight"
    assert clean_name(name) == "model.layers.0.mlp.up_proj.weight"
    assert clean_name("lm_head.weight") == "lm_head.weight"


# --- strategy on one rank ---------------------------------------------------------------


def test_prepare_without_a_process_group_says_how_to_get_one() -> None:
    strategy = Fsdp2Strategy(OPTIM, device=HOST)
    with pytest.raises(RuntimeError, match="init_process_group_from_env"):
        strategy.prepare(tiny_model())


def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="sync_bucket_bytes"):
        Fsdp2Strategy(OPTIM, device=HOST, sync_bucket_bytes=0)
    with pytest.raises(ValueError, match="mixed_precision"):
        Fsdp2Strategy(OPTIM, device=HOST, mixed_precision="fp16")  # type: ignore[arg-type]


def test_prepare_shards_parameters_and_refuses_a_second_module(one_rank_group: None) -> None:
    strategy = Fsdp2Strategy(OPTIM, device=HOST)
    assert isinstance(strategy, Strategy)
    model = tiny_model()
    strategy.prepare(model)
    assert all(isinstance(p, DTensor) for p in model.parameters())
    opt_params = [p for g in strategy.optimizer.param_groups for p in g["params"]]
    assert {id(p) for p in opt_params} == {id(p) for p in model.parameters()}  # built after
    with pytest.raises(RuntimeError, match="already"):
        strategy.prepare(tiny_model())


def test_offload_onload_round_trip_changes_nothing(one_rank_group: None) -> None:
    plain, cycled = Fsdp2Strategy(OPTIM, device=HOST), Fsdp2Strategy(OPTIM, device=HOST)
    plain.prepare(tiny_model())
    cycled.prepare(tiny_model())
    train_step(plain, 0)
    train_step(cycled, 0)
    cycled.offload()
    cycled.offload()  # idempotent: must not forget where the state was
    assert cycled.is_offloaded
    with pytest.raises(RuntimeError, match="onload"):
        cycled.step()
    state = next(iter(cycled.optimizer.state.values()))
    assert all(v.device == HOST for v in state.values() if isinstance(v, torch.Tensor))
    cycled.onload()
    assert not cycled.is_offloaded
    train_step(plain, 1)
    train_step(cycled, 1)
    got, want = params(cycled), params(plain)
    assert all(torch.equal(got[k], want[k]) for k in want)


def test_state_dict_round_trip_restores_weights_optimizer_and_schedule(
    one_rank_group: None,
) -> None:
    strategy = Fsdp2Strategy(OPTIM, device=HOST)
    strategy.prepare(tiny_model())
    train_step(strategy, 0)
    saved = copy.deepcopy(strategy.state_dict())
    after_one, lr_two = params(strategy), strategy.current_lr
    train_step(strategy, 1)
    train_step(strategy, 2)
    strategy.load_state_dict(saved)
    assert strategy.current_lr == lr_two  # schedule position restored
    restored = params(strategy)
    assert all(torch.equal(restored[k], after_one[k]) for k in after_one)
    # the optimizer moments came back too: the next step repeats the original step 1
    train_step(strategy, 1)
    fresh = Fsdp2Strategy(OPTIM, device=HOST)
    fresh.prepare(tiny_model())
    train_step(fresh, 0)
    train_step(fresh, 1)
    got, want = params(strategy), params(fresh)
    assert max(float((got[k] - want[k]).abs().max()) for k in want) < 1e-6


def test_a_checkpoint_of_another_shape_is_refused_before_anything_changes(
    one_rank_group: None,
) -> None:
    """RD11b on FSDP2: one CheckpointShapeError, not torch's size-mismatch lines."""
    from lightrft.domain.checkpoint_fit import CheckpointShapeError

    small = Fsdp2Strategy(OPTIM, device=HOST)
    small.prepare(tiny_model())
    saved = copy.deepcopy(small.state_dict())
    wider = tiny_model()
    wider.config.intermediate_size = 128
    other = Fsdp2Strategy(OPTIM, device=HOST)
    other.prepare(type(wider)(wider.config))
    before = params(other)
    with pytest.raises(CheckpointShapeError, match=r"has shape \[64, 32\] in the checkpoint and"):
        other.load_state_dict(saved)
    after = params(other)
    assert all(torch.equal(after[k], before[k]) for k in before)


def test_lr_scale_lowers_later_steps_and_is_restored_with_the_state(
    one_rank_group: None,
) -> None:
    strategy = Fsdp2Strategy(OPTIM, device=HOST)
    strategy.prepare(tiny_model())
    train_step(strategy, 0)
    scheduled = strategy.current_lr
    strategy.set_lr_scale(0.5)
    saved = copy.deepcopy(strategy.state_dict())
    input_ids, mask = global_batch(1)
    strategy.backward(nll_loss(strategy.module, input_ids, mask, LossNormalizer.from_mask(mask)))
    assert strategy.step().lr == pytest.approx(0.5 * scheduled)
    strategy.set_lr_scale(1.0)
    strategy.load_state_dict(saved)
    assert strategy.current_lr == pytest.approx(0.5 * scheduled)


def test_bf16_computes_in_bf16_and_keeps_fp32_shards(one_rank_group: None) -> None:
    strategy = Fsdp2Strategy(OPTIM, device=HOST, mixed_precision="bf16")
    model = tiny_model()
    strategy.prepare(model)
    seen: list[torch.dtype] = []
    q_proj = model.model.layers[0].self_attn.q_proj
    q_proj.register_forward_pre_hook(lambda module, args: seen.append(module.weight.dtype))
    train_step(strategy, 0)
    assert seen == [torch.bfloat16]
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert all(v.dtype == torch.float32 for _, v in strategy.full_state() if v.is_floating_point())


def test_cpu_offload_policy_trains_like_the_default(one_rank_group: None) -> None:
    offloaded, plain = (
        Fsdp2Strategy(OPTIM, device=HOST, cpu_offload=True),
        Fsdp2Strategy(OPTIM, device=HOST),
    )
    offloaded.prepare(tiny_model())
    plain.prepare(tiny_model())
    for step in range(2):
        train_step(offloaded, step)
        train_step(plain, step)
    offloaded.offload()
    offloaded.onload()
    got, want = params(offloaded), params(plain)
    assert max(float((got[k] - want[k]).abs().max()) for k in want) < 1e-6


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_offload_frees_cuda_memory_and_onload_resumes(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    accelerator = CudaAccelerator(0)
    init_process_group_from_env(accelerator, single_process_group=True)
    try:
        device = accelerator.device()
        strategy = Fsdp2Strategy(OPTIM, device=device)
        strategy.prepare(tiny_model())
        train_step(strategy, 0, device)
        accelerator.synchronize()
        on_device = accelerator.memory_stats().allocated
        strategy.offload()
        accelerator.empty_cache()
        param_bytes = sum(p.numel() * 4 for p in strategy.module.parameters())
        # weights plus two AdamW moments left the device
        assert accelerator.memory_stats().allocated <= on_device - 3 * param_bytes
        assert all(p.to_local().device.type == "cpu" for p in strategy.module.parameters())
        strategy.onload()
        assert all(p.to_local().device == device for p in strategy.module.parameters())
        train_step(strategy, 1, device)
        state = dict(strategy.full_state())
        assert all(t.device == device for t in state.values())
    finally:
        shutdown_process_group()
