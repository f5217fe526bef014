"""HfRolloutEngine(shares_policy_weights=True): the engine runs the policy's own module."""

from __future__ import annotations

import copy

import pytest
import torch

from lightrft.adapters.hf import HfPolicy, HfRolloutEngine, LoraParams
from lightrft.adapters.hf.lora import apply_lora
from lightrft.adapters.single_device import SingleDeviceStrategy
from lightrft.domain.types import OptimizerParams, PromptRecord, SamplingParams
from tests.unit.adapters.hf.hf_tiny import make_batch, tiny_model, tiny_tokenizer

CPU = torch.device("cpu")
PROMPT_IDS = [[5, 9, 12, 40], [7, 8]]
PROMPTS = [PromptRecord(f"p{i}", "", tuple(ids)) for i, ids in enumerate(PROMPT_IDS)]
SAMPLING = SamplingParams(n=3, max_new_tokens=6, seed=4)


def shared(model: torch.nn.Module) -> HfRolloutEngine:
    return HfRolloutEngine(model, tiny_tokenizer(), CPU, shares_policy_weights=True)


def test_generates_what_an_engine_with_its_own_copy_generates() -> None:
    model = tiny_model(0)
    private = HfRolloutEngine(copy.deepcopy(model), tiny_tokenizer(), CPU)
    a, b = shared(model).generate(PROMPTS, SAMPLING), private.generate(PROMPTS, SAMPLING)
    assert [c.token_ids for c in a] == [c.token_ids for c in b]
    for x, y in zip(a, b, strict=True):
        assert x.logprobs == pytest.approx(y.logprobs, abs=1e-6)


def test_holds_no_copy_and_leaves_the_training_state_alone() -> None:
    model = tiny_model(0).train()
    model.gradient_checkpointing_enable()  # in train mode HF would turn the KV cache off
    grads = {n: torch.randn_like(p) for n, p in model.named_parameters()}
    for n, p in model.named_parameters():
        p.grad = grads[n].clone()
    pointers = {n: p.data_ptr() for n, p in model.named_parameters()}
    eng = shared(model)
    out = eng.generate(PROMPTS, SAMPLING)
    assert eng.module is model and eng.shares_policy_weights
    assert model.training  # train mode restored
    for n, p in model.named_parameters():
        assert p.requires_grad and p.data_ptr() == pointers[n]
        assert torch.equal(p.grad, grads[n])
    reference = tiny_model(0)  # eval mode, no checkpointing: same samples
    expected = HfRolloutEngine(reference, tiny_tokenizer(), CPU).generate(PROMPTS, SAMPLING)
    assert [c.token_ids for c in out] == [c.token_ids for c in expected]


def test_an_optimizer_step_is_seen_at_once_and_the_sync_copies_nothing() -> None:
    model = tiny_model(0)
    policy = HfPolicy(model)
    strategy = SingleDeviceStrategy(CPU, OptimizerParams(lr=0.05, max_grad_norm=None))
    strategy.prepare(policy.module)
    eng = shared(model)
    before = eng.generate(PROMPTS, SAMPLING)
    batch = make_batch([PROMPT_IDS[c.prompt_index] for c in before], [c.token_ids for c in before])
    strategy.backward(-policy.forward(batch).logprobs.sum())
    strategy.step()
    eng.load_weights(policy.weights_for_sync(strategy.full_state()))  # aliases: accepted
    after = eng.generate(PROMPTS, SAMPLING)
    assert [c.logprobs for c in after] != [c.logprobs for c in before]
    batch = make_batch([PROMPT_IDS[c.prompt_index] for c in after], [c.token_ids for c in after])
    with torch.no_grad():
        expected = policy.forward(batch).logprobs
    for row, c in enumerate(after):
        got = torch.tensor(c.logprobs)
        torch.testing.assert_close(got, expected[row, : len(got)], atol=1e-5, rtol=1e-5)


def test_refuses_weights_that_are_not_its_own() -> None:
    model = tiny_model(0)
    eng = shared(model)
    name, param = next(iter(model.named_parameters()))
    with pytest.raises(ValueError, match=name):
        eng.load_weights([(name, param.detach().clone())])
    with pytest.raises(KeyError, match="no_such"):
        eng.load_weights([("no_such.weight", param.detach())])
    assert eng.weight_loads == 0


@pytest.mark.parametrize("sleep_mode", ["offload", "discard"])
def test_sleep_gates_generation_and_keeps_the_weights_in_place(sleep_mode: str) -> None:
    model = tiny_model(0)
    eng = HfRolloutEngine(
        model,
        tiny_tokenizer(),
        CPU,
        sleep_mode=sleep_mode,
        shares_policy_weights=True,  # type: ignore[arg-type]
    )
    before = eng.generate(PROMPTS, SAMPLING)
    pointers = [p.data_ptr() for p in model.parameters()]
    eng.sleep()
    assert [p.data_ptr() for p in model.parameters()] == pointers
    with pytest.raises(RuntimeError, match="asleep"):
        eng.generate(PROMPTS, SAMPLING)
    eng.wake_up()
    assert [c.token_ids for c in eng.generate(PROMPTS, SAMPLING)] == [c.token_ids for c in before]


def test_a_lora_module_or_a_module_elsewhere_cannot_be_shared() -> None:
    lora = apply_lora(tiny_model(0), LoraParams(rank=2, alpha=4.0))
    with pytest.raises(ValueError, match="LoRA"):
        shared(lora)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not on the engine's device"):
        HfRolloutEngine(
            tiny_model(0), tiny_tokenizer(), torch.device("meta"), shares_policy_weights=True
        )


def test_device_matching_accepts_an_unindexed_device_of_the_same_type() -> None:
    from lightrft.adapters.hf.rollout import _same_device

    cuda0, cuda1, cuda = torch.device("cuda:0"), torch.device("cuda:1"), torch.device("cuda")
    assert _same_device(cuda0, cuda) and _same_device(cuda0, cuda0)
    assert not _same_device(cuda0, cuda1) and not _same_device(CPU, cuda)
    assert _same_device(CPU, CPU)


@pytest.mark.gpu
def test_shares_a_cuda_module_and_matches_the_cpu_samples_on_cuda() -> None:
    cuda = torch.device("cuda")
    model = tiny_model(0).to(cuda)
    eng = HfRolloutEngine(model, tiny_tokenizer(), cuda, shares_policy_weights=True)
    greedy = SamplingParams(n=2, temperature=0.0, max_new_tokens=6)
    on_gpu = eng.generate(PROMPTS, greedy)
    on_cpu = shared(tiny_model(0)).generate(PROMPTS, greedy)
    assert [c.token_ids for c in on_gpu] == [c.token_ids for c in on_cpu]
    assert all(p.device.type == "cuda" for p in model.parameters())
