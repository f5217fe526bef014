"""Prefix sharing: the plan by hand, and equality with the padded path (values and gradients)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import Tensor, nn
from transformers import LlamaForCausalLM

from lightrft.adapters.fakes import FakeCollective, FakeStrategy
from lightrft.adapters.fsdp import Fsdp2Strategy
from lightrft.adapters.hf import HfPolicy, HfReferenceModel, LoraParams
from lightrft.adapters.hf import prefix_sharing as ps
from lightrft.adapters.hf.logprobs import response_logprobs
from lightrft.adapters.hf.prefix_sharing import (
    PrefixSharing,
    group_prompts,
    layout_problem,
    plan_prefix_sharing,
    prefix_shared_logprobs,
    worth_sharing,
)
from lightrft.application.params import AlgorithmParams, TrainParams
from lightrft.application.policy_optimizer import PolicyOptimizer
from lightrft.domain.ports import PolicyOutput
from lightrft.domain.types import OptimizerParams, SequenceBatch
from tests.helpers.experiences import ramp_experience
from tests.unit.adapters.hf.hf_tiny import make_batch, tiny_config

CPU = torch.device("cpu")
A, B, C = [5, 9, 12, 40, 41], [7, 8], [100, 3, 44]
A_SUFFIX = [12, 40, 41]  # A's last three tokens: a different prompt, not a shared one

LAYOUTS: dict[str, tuple[list[list[int]], list[list[int]]]] = {
    # prompts of lengths 5 and 2 (left padding), responses of lengths 1..5 (right padding)
    "grouped": (
        [A, A, A, B, B, B],
        [[20, 21, 22], [23], [24, 25, 26, 27, 28], [30, 31], [32, 33, 34, 35], [36]],
    ),
    "not_adjacent": (
        [A, B, A, C, B, A_SUFFIX, A],
        [[20, 21], [30, 31, 32], [22], [60, 61, 62, 63], [33], [70, 71], [23, 24, 25]],
    ),
    "all_distinct": ([A, B, C], [[20, 21, 22], [30, 31, 32, 33, 34], [60]]),
}


def llama(seed: int = 0, *, attn: str = "sdpa", tie: bool = False) -> LlamaForCausalLM:
    """A random 3-layer Llama (vocab 259, hidden 32, GQA), fp32, eval mode."""
    config = tiny_config(attn=attn, tie=tie)
    config.num_hidden_layers = 3
    torch.manual_seed(seed)
    return LlamaForCausalLM(config).eval()


def layout(name: str) -> SequenceBatch:
    return make_batch(*LAYOUTS[name])


def with_holes_in_response_mask(batch: SequenceBatch) -> SequenceBatch:
    """Unscored tokens inside responses (they still condition the later tokens)."""
    mask = batch.response_mask.clone()
    mask[0, 1] = False
    mask[-1, 0] = False
    return SequenceBatch(batch.input_ids, batch.attention_mask, mask)


Forward = Callable[[nn.Module, SequenceBatch], PolicyOutput]


def padded(temperature: float) -> Forward:
    return lambda m, b: response_logprobs(m, b, temperature=temperature, with_entropy=True)


def shared(temperature: float) -> Forward:
    return lambda m, b: prefix_shared_logprobs(m, b, temperature=temperature, with_entropy=True)


def run(model: nn.Module, batch: SequenceBatch, forward: Forward) -> tuple[PolicyOutput, Tensor]:
    """Outputs of ``forward`` and the flat gradient of a loss using log-probs and entropy."""
    model.zero_grad(set_to_none=True)
    out = forward(model, batch)
    assert out.entropy is not None
    weights = torch.linspace(-1.0, 2.0, out.logprobs.numel()).reshape(out.logprobs.shape)
    (out.logprobs * weights).sum().add(0.3 * (out.entropy * weights.flip(0)).sum()).backward()
    grads = [p.grad.flatten() for p in model.parameters() if p.requires_grad]
    assert all(g is not None for g in grads)
    return out, torch.cat(grads)


def assert_same(model: nn.Module, batch: SequenceBatch, temperature: float = 1.0) -> None:
    ref_out, ref_grad = run(model, batch, padded(temperature))
    out, grad = run(model, batch, shared(temperature))
    assert out.entropy is not None and ref_out.entropy is not None
    torch.testing.assert_close(out.logprobs, ref_out.logprobs, atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(out.entropy, ref_out.entropy, atol=2e-5, rtol=1e-5)
    scale = float(ref_grad.abs().max())
    assert scale > 0
    torch.testing.assert_close(grad, ref_grad, atol=1e-5 * scale, rtol=1e-4)


# ---- the plan, by hand ----------------------------------------------------------------


def test_plan_packs_each_prompt_once_followed_by_its_responses() -> None:
    # rows: (A2, r0), (B1, r1), (A2, r2); A2 = [5, 9], B1 = [7]; P = 2, R = 3
    batch = make_batch([[5, 9], [7], [5, 9]], [[20, 21, 22], [30], [40, 41]])
    plan = plan_prefix_sharing(batch)
    # packed row 0: prompt A2 (2) + r0 (3) + r2 (2) = 7 tokens; row 1: B1 (1) + r1 (1) = 2
    assert plan.input_ids.tolist() == [[5, 9, 20, 21, 22, 40, 41], [7, 30, 0, 0, 0, 0, 0]]
    # responses continue from the prompt length: r0 at 2, 3, 4; r2 again at 2, 3
    assert plan.position_ids.tolist() == [[0, 1, 2, 3, 4, 2, 3], [0, 1, 0, 0, 0, 0, 0]]
    # 0 prompt, b + 1 response of sample b, -1 padding
    assert plan.segment_ids.tolist() == [[0, 0, 1, 1, 1, 3, 3], [0, 2, -1, -1, -1, -1, -1]]
    # the first token of a response is predicted by the last prompt token (column 1 or 0),
    # the others by the token before them
    assert plan.head_rows.tolist() == [0, 0, 0, 1, 0, 0]
    assert plan.head_cols.tolist() == [1, 2, 3, 0, 1, 5]
    assert plan.labels.tolist() == [20, 21, 22, 30, 40, 41]
    mask = plan.attention_mask()
    assert mask.shape == (2, 1, 7, 7) and mask.dtype == torch.bool
    expected_row0 = [
        [1, 0, 0, 0, 0, 0, 0],  # prompt: causal
        [1, 1, 0, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0, 0],  # r0: prompt + itself
        [1, 1, 1, 1, 0, 0, 0],
        [1, 1, 1, 1, 1, 0, 0],
        [1, 1, 0, 0, 0, 1, 0],  # r2: prompt + itself, not r0
        [1, 1, 0, 0, 0, 1, 1],
    ]
    assert mask[0, 0].int().tolist() == expected_row0
    padding_rows = mask[1, 0, 2:].int()  # padding attends to itself only
    assert torch.equal(padding_rows, torch.eye(7, dtype=torch.int)[2:])
    additive = plan.attention_mask(torch.float32)
    assert torch.equal(additive == 0, mask)
    assert bool((additive[~mask] == torch.finfo(torch.float32).min).all())


def test_groups_are_equal_unpadded_prompts_numbered_by_first_appearance() -> None:
    batch = layout("not_adjacent")  # A, B, A, C, B, A_SUFFIX, A
    groups = group_prompts(batch)
    assert groups.group.tolist() == [0, 1, 0, 2, 1, 3, 0]
    assert groups.first_rows.tolist() == [0, 1, 3, 5]
    # A: 5 + (2 + 1 + 3); B: 2 + (3 + 1); C: 3 + 4; A_SUFFIX: 3 + 2
    assert groups.row_lengths.tolist() == [11, 6, 7, 5]
    assert worth_sharing(groups) and worth_sharing(groups, max_row_tokens=11)
    assert not worth_sharing(groups, max_row_tokens=10)
    assert not worth_sharing(group_prompts(layout("all_distinct")))


def test_layouts_that_cannot_be_shared_exactly_are_named() -> None:
    batch = layout("grouped")  # P = 5: prompt A in columns 0-4, prompt B in columns 3-4
    assert layout_problem(batch) is None
    gap = batch.attention_mask.clone()
    gap[0, 1] = 0  # a hole inside prompt A of row 0
    holey = SequenceBatch(batch.input_ids, gap, batch.response_mask)
    assert layout_problem(holey) == "the attention mask of row 0 has holes"
    with pytest.raises(ValueError, match="holes"):
        plan_prefix_sharing(holey)
    no_prompt = batch.attention_mask.clone()
    no_prompt[3, 3:5] = 0  # row 3 keeps its response only
    empty = SequenceBatch(batch.input_ids, no_prompt, batch.response_mask)
    assert layout_problem(empty) == "row 3 has an empty prompt"


# ---- equality with the padded path ---------------------------------------------------


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_logprobs_entropy_and_gradients_equal_the_padded_path(attn: str, name: str) -> None:
    assert_same(llama(attn=attn), layout(name))


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_unscored_tokens_and_temperature(attn: str) -> None:
    batch = with_holes_in_response_mask(layout("not_adjacent"))
    model = llama(1, attn=attn, tie=True)
    assert_same(model, batch, temperature=0.7)
    out = prefix_shared_logprobs(model, batch)
    assert out.logprobs[0, 1] == 0 and out.logprobs[-1, 0] == 0
    assert torch.all(out.logprobs[batch.response_mask.bool()] < 0)


def test_lora_adapters_stay_active_and_gradients_agree() -> None:
    policy = HfPolicy(llama(2), lora=LoraParams(rank=4, alpha=8), prefix_sharing="on")
    with torch.no_grad():  # B = 0 at init: give the adapters an effect
        for name, param in policy.module.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.2)
    batch = layout("grouped")
    off = HfPolicy(llama(2), prefix_sharing="off")
    lora_changes_output = not torch.allclose(
        policy.forward(batch).logprobs, off.forward(batch).logprobs, atol=1e-3
    )
    assert lora_changes_output
    trainable = [n for n, p in policy.module.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert_same(policy.module, batch, temperature=0.9)


def test_gradient_checkpointing_in_train_mode() -> None:
    model = llama(6)
    model.gradient_checkpointing_enable()
    assert_same(model.train(), layout("grouped"))


def test_runs_through_the_wrapped_forward_so_fsdp2_hooks_gather_the_weights(
    one_rank_group: None,
) -> None:
    # The root FSDP2 group (embeddings, final norm, LM head) is gathered by the root's
    # forward hook; calling the decoder directly would meet sharded DTensor weights.
    model = llama(7)
    Fsdp2Strategy(OptimizerParams(lr=1e-3), device=CPU).prepare(model)
    batch = layout("grouped")

    def grads(forward: Forward) -> tuple[Tensor, Tensor]:
        model.zero_grad(set_to_none=True)
        out = forward(model, batch)
        assert out.entropy is not None
        (out.logprobs.sum() + 0.3 * out.entropy.sum()).backward()
        flat = torch.cat([p.grad.full_tensor().flatten() for p in model.parameters()])
        return out.logprobs.detach(), flat

    ref_logprobs, ref_grad = grads(padded(1.0))
    logprobs, grad = grads(shared(1.0))
    torch.testing.assert_close(logprobs, ref_logprobs, atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(grad, ref_grad, atol=1e-5 * float(ref_grad.abs().max()), rtol=1e-4)


def test_lm_head_sees_only_the_scored_tokens() -> None:
    model = llama()
    seen: list[tuple[int, ...]] = []
    model.lm_head.register_forward_hook(lambda m, i, o: seen.append(tuple(o.shape)))
    batch = with_holes_in_response_mask(layout("grouped"))
    prefix_shared_logprobs(model, batch)
    scored = int(batch.response_mask.sum())  # K = 16 response tokens - 2 unscored = 14
    assert seen == [(1, scored, 259)]


def test_a_batch_without_scored_tokens_gives_zeros() -> None:
    batch = layout("grouped")
    empty = SequenceBatch(
        batch.input_ids, batch.attention_mask, torch.zeros_like(batch.response_mask)
    )
    out = prefix_shared_logprobs(llama(), empty, with_entropy=True)
    assert out.entropy is not None
    assert not out.logprobs.any() and not out.entropy.any()


# ---- the option on HfPolicy / HfReferenceModel ---------------------------------------


@pytest.fixture
def shared_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts prefix-shared forwards (the function still runs)."""
    calls: list[int] = []
    original = ps.prefix_shared_logprobs

    def spy(*args: object, **kwargs: object) -> PolicyOutput:
        calls.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ps, "prefix_shared_logprobs", spy)
    return calls


@pytest.mark.parametrize(
    ("mode", "name", "limit", "expect_shared"),
    [
        ("auto", "grouped", 4096, True),
        ("auto", "all_distinct", 4096, False),  # nothing repeats
        ("auto", "grouped", 13, False),  # packed row of A: 5 + 3 + 1 + 5 = 14 tokens
        ("auto", "grouped", 14, True),
        ("on", "all_distinct", 4096, True),
        ("on", "grouped", 13, True),
        ("off", "grouped", 4096, False),
    ],
)
def test_mode_chooses_the_path_and_every_path_gives_the_same_values(
    shared_calls: list[int], mode: str, name: str, limit: int, expect_shared: bool
) -> None:
    batch = layout(name)
    policy = HfPolicy(llama(), prefix_sharing=mode, max_shared_row_tokens=limit)  # type: ignore[arg-type]
    out = policy.forward(batch, temperature=0.8, with_entropy=True)
    assert len(shared_calls) == int(expect_shared)
    expected = response_logprobs(policy.module, batch, temperature=0.8, with_entropy=True)
    torch.testing.assert_close(out.logprobs, expected.logprobs, atol=2e-5, rtol=1e-5)
    assert out.entropy is not None and expected.entropy is not None
    torch.testing.assert_close(out.entropy, expected.entropy, atol=2e-5, rtol=1e-5)


def test_reference_model_shares_prefixes_under_no_grad(shared_calls: list[int]) -> None:
    batch = layout("not_adjacent")
    reference = HfReferenceModel(llama(3), CPU)
    out = reference.forward(batch)
    assert shared_calls == [1] and not out.logprobs.requires_grad
    off = HfReferenceModel(llama(3), CPU, prefix_sharing="off", packing=True).forward(batch)
    torch.testing.assert_close(out.logprobs, off.logprobs, atol=2e-5, rtol=1e-5)


def flash_model() -> LlamaForCausalLM:
    model = llama()
    model.config._attn_implementation = "flash_attention_2"  # never run: no flash-attn here
    return model


def test_on_refuses_flash_attention_at_construction() -> None:
    with pytest.raises(ValueError, match="flash_attention_2"):
        HfPolicy(flash_model(), prefix_sharing="on")
    with pytest.raises(ValueError, match="flash_attention_2"):
        HfReferenceModel(flash_model(), CPU, prefix_sharing="on")
    with pytest.raises(ValueError, match="flash_attention_2"):
        HfPolicy(flash_model(), lora=LoraParams(rank=2), prefix_sharing="on")  # PEFT unwrapped
    with pytest.raises(ValueError, match="prefix_sharing must be one of"):
        HfPolicy(llama(), prefix_sharing="always")  # type: ignore[arg-type]


def test_auto_and_off_never_plan_for_flash_attention() -> None:
    batch = layout("grouped")
    for mode in ("auto", "off"):
        HfPolicy(flash_model(), prefix_sharing=mode)  # type: ignore[arg-type]
        assert PrefixSharing(mode).plan(flash_model(), batch) is None  # type: ignore[arg-type]


def test_a_sliding_window_shorter_than_a_packed_row_is_not_shared() -> None:
    model = llama()
    model.config.sliding_window = 10  # packed row of A has 14 tokens; each sequence <= 10
    batch = layout("grouped")
    assert PrefixSharing("auto").plan(model, batch) is None
    with pytest.raises(ValueError, match="sliding window"):
        PrefixSharing("on").plan(model, batch)
    model.config.sliding_window = 14
    assert PrefixSharing("auto").plan(model, batch) is not None


def test_on_refuses_a_batch_it_cannot_share_exactly_and_auto_falls_back(
    shared_calls: list[int],
) -> None:
    batch = layout("grouped")
    gap = batch.attention_mask.clone()
    gap[0, 1] = 0
    holey = SequenceBatch(batch.input_ids, gap, batch.response_mask)
    with pytest.raises(ValueError, match="holes"):
        HfPolicy(llama(), prefix_sharing="on").forward(holey)
    out = HfPolicy(llama()).forward(holey)
    assert shared_calls == []
    torch.testing.assert_close(out.logprobs, response_logprobs(llama(), holey).logprobs)


# ---- random layouts ------------------------------------------------------------------

PROPERTY_MODEL = llama(4)


@st.composite
def batches(draw: st.DrawFn) -> SequenceBatch:
    """1-3 distinct prompts (1-5 tokens), 1-3 responses each (0-4 tokens), shuffled rows,
    random unscored tokens."""
    token = st.integers(3, 258)
    distinct = draw(st.lists(st.lists(token, min_size=1, max_size=5), min_size=1, max_size=3))
    rows: list[tuple[list[int], list[int]]] = []
    for prompt in distinct:
        for _ in range(draw(st.integers(1, 3))):
            rows.append((prompt, draw(st.lists(token, min_size=0, max_size=4))))
    rows = draw(st.permutations(rows))
    if all(not response for _, response in rows):
        rows[0] = (rows[0][0], [7])
    prompts: Sequence[list[int]] = [p for p, _ in rows]
    batch = make_batch(prompts, [r for _, r in rows])
    keep = draw(
        st.lists(
            st.booleans(),
            min_size=batch.response_mask.numel(),
            max_size=batch.response_mask.numel(),
        )
    )
    mask = batch.response_mask & torch.tensor(keep).reshape(batch.response_mask.shape)
    return SequenceBatch(batch.input_ids, batch.attention_mask, mask)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=batches(), temperature=st.sampled_from([1.0, 0.6]))
def test_random_layouts_equal_the_padded_path(batch: SequenceBatch, temperature: float) -> None:
    model = PROPERTY_MODEL
    ref_out, ref_grad = run(model, batch, padded(temperature))
    out, grad = run(model, batch, shared(temperature))
    torch.testing.assert_close(out.logprobs, ref_out.logprobs, atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(out.entropy, ref_out.entropy, atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(
        grad, ref_grad, atol=1e-5 * max(1.0, float(ref_grad.abs().max())), rtol=1e-4
    )


# ---- with the optimizer --------------------------------------------------------------


class GradRecordingStrategy(FakeStrategy):
    """A ``FakeStrategy`` that keeps a copy of the gradients each step applies."""

    def __init__(self) -> None:
        super().__init__(OptimizerParams(lr=1e-3))
        self.grads: list[Tensor] = []

    def step(self, *, skip_reason: str | None = None):  # type: ignore[no-untyped-def]
        grads = [p.grad.flatten() for p in self.module.parameters() if p.grad is not None]
        self.grads.append(torch.cat(grads).clone())
        return super().step(skip_reason=skip_reason)


@pytest.mark.parametrize("micro", [{"micro_batch_size": 3}, {"max_tokens_per_micro_batch": 30}])
def test_optimizer_micro_batches_share_prefixes_and_match_one_micro_batch(
    shared_calls: list[int], micro: dict[str, int]
) -> None:
    batch = layout("not_adjacent")  # groups A, B, A, C, B, A_SUFFIX, A
    exp = ramp_experience(batch, [0, 1, 0, 2, 1, 3, 0])
    algorithm = AlgorithmParams(entropy_coef=0.01)
    grads = []
    for train in (TrainParams(micro_batch_size=7, shuffle=False), TrainParams(**micro)):
        policy = HfPolicy(llama(5))
        strategy = GradRecordingStrategy()
        strategy.prepare(policy.module)
        optimizer = PolicyOptimizer(
            policy=policy,
            strategy=strategy,
            collective=FakeCollective(),
            algorithm=algorithm,
            train=train,
        )
        shared_calls.clear()
        optimizer.train(exp, kl_coef=0.0, step=0)
        grads.append(strategy.grads[0])
    assert shared_calls, "no micro-batch shared a prompt"  # group A (3 rows) spans <= 2
    torch.testing.assert_close(grads[1], grads[0], atol=1e-6, rtol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_sdpa_with_the_boolean_mask_matches_the_padded_path(dtype: torch.dtype) -> None:
    cuda = torch.device("cuda")
    model = llama(7).to(device=cuda, dtype=dtype)
    cpu_batch = layout("grouped")
    batch = SequenceBatch(
        cpu_batch.input_ids.to(cuda),
        cpu_batch.attention_mask.to(cuda),
        cpu_batch.response_mask.to(cuda),
    )
    with torch.no_grad():
        expected = response_logprobs(model, batch, with_entropy=True)
        got = prefix_shared_logprobs(model, batch, with_entropy=True)
    tol = 2e-5 if dtype == torch.float32 else 5e-2
    torch.testing.assert_close(got.logprobs, expected.logprobs, atol=tol, rtol=tol)
    assert got.entropy is not None and expected.entropy is not None
    torch.testing.assert_close(got.entropy, expected.entropy, atol=tol, rtol=tol)
