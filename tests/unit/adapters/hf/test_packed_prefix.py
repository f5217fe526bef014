"""Packing several prompt groups into one row (prefix sharing + packing): the layout by hand,
and log-probs, entropies and gradients equal to the padded path (fp32, sdpa and eager)."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaForCausalLM

from lightrft.adapters.hf import HfPolicy
from lightrft.adapters.hf.logprobs import response_logprobs
from lightrft.adapters.hf.packed_prefix import pack_prefix_plan
from lightrft.adapters.hf.prefix_sharing import plan_prefix_sharing, prefix_shared_logprobs
from lightrft.domain.types import SequenceBatch
from tests.unit.adapters.hf.hf_tiny import make_batch, tiny_config

A, B, C = [5, 9, 12, 40, 41], [7, 8], [100, 3, 44]
PROMPTS = [A, A, B, B, B, C, C]
RESPONSES = [[20, 21, 22], [23], [30, 31], [32, 33, 34, 35], [36], [60, 61, 62, 63, 64, 65], [66]]


def llama(attn: str = "sdpa") -> LlamaForCausalLM:
    torch.manual_seed(0)
    return LlamaForCausalLM(tiny_config(attn=attn)).eval()


def batch() -> SequenceBatch:
    return make_batch(PROMPTS, RESPONSES)


def test_groups_are_concatenated_into_balanced_rows() -> None:
    plan = plan_prefix_sharing(batch())
    # group rows: A = 5 + 3 + 1 = 9, B = 2 + 2 + 4 + 1 = 9, C = 3 + 6 + 1 = 10 tokens (N = 10)
    assert plan.input_ids.shape == (3, 10)
    packed = pack_prefix_plan(plan, 20)
    # 28 tokens / 20 -> 2 rows; LPT: C (10) -> row 0, A (9) -> row 1, B (9) -> row 1 (9 < 10)
    # rows by first group: [A, B] (18 tokens), [C] (10): M = 18
    assert packed.input_ids.shape == (2, 18)
    assert packed.group_ids is not None
    assert packed.group_ids[0].tolist() == [0] * 9 + [1] * 9
    assert packed.group_ids[1].tolist() == [2] * 10 + [-1] * 8
    # positions restart for group B at column 9: prompt 0, 1, then its responses 2, 3, ...
    assert packed.position_ids[0, 9:].tolist() == [0, 1, 2, 3, 2, 3, 4, 5, 2]
    mask = packed.attention_mask()[0, 0]  # [18, 18]
    assert not bool(mask[9:, :9].any())  # B sees nothing of A
    assert bool(mask[11, 9]) and bool(mask[11, 10])  # B's first response sees B's prompt


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("row_tokens", [9, 20, 64])
def test_packed_rows_equal_the_padded_path(attn: str, row_tokens: int) -> None:
    model, seq = llama(attn), batch()
    want = response_logprobs(model, seq, temperature=0.8, with_entropy=True)
    plan = pack_prefix_plan(plan_prefix_sharing(seq), row_tokens)
    got = prefix_shared_logprobs(model, seq, temperature=0.8, with_entropy=True, plan=plan)
    assert got.entropy is not None and want.entropy is not None
    torch.testing.assert_close(got.logprobs, want.logprobs, atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(got.entropy, want.entropy, atol=2e-5, rtol=1e-5)


def test_policy_with_packing_gives_the_padded_gradients() -> None:
    seq = batch()
    grads = []
    for packing, sharing in ((False, "off"), (True, "on")):
        model = llama()
        policy = HfPolicy(model, packing=packing, prefix_sharing=sharing, max_shared_row_tokens=20)  # type: ignore[arg-type]
        seen: list[tuple[int, ...]] = []
        handle = model.model.embed_tokens.register_forward_hook(
            lambda m, i, o, seen=seen: seen.append(tuple(i[0].shape))
        )
        out = policy.forward(seq, with_entropy=True)
        handle.remove()
        assert out.entropy is not None
        (out.logprobs.sum() + 0.3 * out.entropy.sum()).backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
        if packing:
            assert seen == [(2, 18)]  # two packed rows of three groups
    torch.testing.assert_close(grads[1], grads[0], atol=2e-5, rtol=1e-4)
