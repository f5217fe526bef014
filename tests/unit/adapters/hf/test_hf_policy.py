"""HfPolicy log-probs against a direct full-logits computation; padded, packed, chunked."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from lightrft.adapters.hf import HfPolicy
from lightrft.adapters.hf.logprobs import position_ids_from_mask
from lightrft.domain.ports import Policy
from lightrft.domain.types import SequenceBatch
from tests.unit.adapters.hf.hf_tiny import (
    PROMPTS,
    RESPONSES,
    direct_logprobs,
    make_batch,
    tiny_model,
)


def test_is_a_policy() -> None:
    assert isinstance(HfPolicy(tiny_model()), Policy)


def test_position_ids_count_attended_tokens() -> None:
    mask = torch.tensor([[0, 0, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]])
    # cumsum - 1, floored at 0: left padding 0, right padding repeats the last position
    expected = torch.tensor([[0, 0, 0, 1, 2, 2], [0, 1, 2, 3, 4, 5]])
    assert torch.equal(position_ids_from_mask(mask), expected)


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize(
    ("packing", "chunk_size"), [(False, 1024), (True, 1024), (False, 2), (True, 3)]
)
def test_logprobs_and_entropy_equal_direct_computation(
    attn: str, packing: bool, chunk_size: int
) -> None:
    model = tiny_model(attn=attn)
    policy = HfPolicy(model, packing=packing, chunk_size=chunk_size)
    batch = make_batch(PROMPTS, RESPONSES)
    out = policy.forward(batch, temperature=0.7, with_entropy=True)
    assert out.entropy is not None
    assert out.logprobs.shape == (3, 5)
    for i, (prompt, response) in enumerate(zip(PROMPTS, RESPONSES, strict=True)):
        lp, ent = direct_logprobs(model, prompt, response, temperature=0.7)
        n = len(response)
        torch.testing.assert_close(out.logprobs[i, :n].double(), lp, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(out.entropy[i, :n].double(), ent, atol=1e-5, rtol=1e-5)
        assert torch.all(out.logprobs[i, n:] == 0) and torch.all(out.entropy[i, n:] == 0)


def test_packed_and_padded_gradients_agree() -> None:
    grads = []
    for packing in (False, True):
        model = tiny_model()
        policy = HfPolicy(model, packing=packing)
        out = policy.forward(make_batch(PROMPTS, RESPONSES), with_entropy=True)
        assert out.entropy is not None
        (out.logprobs.sum() + 0.3 * out.entropy.sum()).backward()
        flat = [p.grad.flatten() for p in model.parameters() if p.grad is not None]
        grads.append(torch.cat(flat))
    torch.testing.assert_close(grads[0], grads[1], atol=1e-5, rtol=1e-4)


def test_response_mask_zeroes_unscored_tokens() -> None:
    batch = make_batch(PROMPTS, RESPONSES)
    mask = batch.response_mask.clone()
    mask[1, 2] = False  # a token inside the response that does not count
    partial = SequenceBatch(batch.input_ids, batch.attention_mask, mask)
    for packing in (False, True):
        policy = HfPolicy(tiny_model(), packing=packing)
        full, part = policy.forward(batch).logprobs, policy.forward(partial).logprobs
        assert part[1, 2] == 0
        keep = mask
        torch.testing.assert_close(part[keep], full[keep], atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("packing", [False, True])
def test_lm_head_sees_only_response_predicting_positions(packing: bool) -> None:
    model = tiny_model()
    seen: list[tuple[int, ...]] = []
    model.lm_head.register_forward_hook(lambda m, i, o: seen.append(tuple(i[0].shape)))
    batch = make_batch(PROMPTS, RESPONSES)
    HfPolicy(model, packing=packing).forward(batch)
    scored = sum(len(r) for r in RESPONSES)  # K = 9 scored tokens; R = 5
    assert seen == ([(1, scored, 32)] if packing else [(3, 5, 32)])


def test_grad_mode_follows_caller() -> None:
    policy = HfPolicy(tiny_model())
    batch = make_batch(PROMPTS, RESPONSES)
    assert policy.forward(batch).logprobs.requires_grad
    with torch.no_grad():
        assert not policy.forward(batch).logprobs.requires_grad


def test_bad_batches_are_refused() -> None:
    policy = HfPolicy(tiny_model())
    ids = torch.tensor([[5, 6, 7]])
    no_prompt = SequenceBatch(ids, torch.ones_like(ids), torch.ones(1, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="prompt column"):
        policy.forward(no_prompt)
    mm = SequenceBatch(ids, torch.ones_like(ids), torch.ones(1, 1), multimodal=({"pixels": 1},))
    with pytest.raises(ValueError, match="multimodal"):
        policy.forward(mm)


def test_module_is_the_wrapped_model() -> None:
    model = tiny_model()
    policy = HfPolicy(model)
    assert policy.module is model and isinstance(policy.module, nn.Module)
    assert not policy.uses_lora
    state = list(model.state_dict().items())
    assert list(policy.weights_for_sync(state)) == state


@pytest.mark.parametrize("packing", [False, True])
def test_a_batch_without_scored_tokens_gives_zeros(packing: bool) -> None:
    batch = make_batch(PROMPTS, RESPONSES)
    empty = SequenceBatch(
        batch.input_ids, batch.attention_mask, torch.zeros_like(batch.response_mask)
    )
    out = HfPolicy(tiny_model(), packing=packing).forward(empty, with_entropy=True)
    assert out.entropy is not None
    assert torch.equal(out.logprobs, torch.zeros(3, 5)) and torch.equal(
        out.entropy, torch.zeros(3, 5)
    )
