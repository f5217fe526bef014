"""FakePolicy, FakeCritic and FakeReferenceModel against direct computations."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

from lightrft.adapters.fakes import (
    FakeCritic,
    FakePolicy,
    FakeReferenceModel,
    make_sequence_batch,
)
from lightrft.adapters.fakes.tiny_lm import TinyGruLm, TinyGruValueModel
from lightrft.domain.ports import Critic, Policy, ReferenceModel

PROMPTS = [[5, 7, 2], [9, 2], [3, 4, 6, 8, 2]]
RESPONSES = [[6, 1], [14, 11, 4, 1], [9]]


def _direct_logits(module: TinyGruLm, ids: list[int]) -> Tensor:
    """Logits of one unpadded sequence, by hand from the module's parts.

    Shape: (T, V). Runs the GRU over exactly ``ids`` (no padding, no alignment code) and
    builds the head features [GRU state_t, embedding of token t-1 (pad 0 before start)].
    """
    tokens = torch.tensor(ids)
    embedded = module.backbone.embed(tokens)  # [T, H]
    states, _ = module.backbone.gru(embedded[None])  # [1, T, H]
    previous = module.backbone.embed(torch.tensor([0] + ids[:-1]))  # [T, H]
    logits: Tensor = module.head(torch.cat([states[0], previous], dim=-1))
    return logits


def _direct_logprobs(module: TinyGruLm, prompt: list[int], response: list[int], t: float) -> Tensor:
    """log softmax(logits / t) of each response token, predicted from the column before it."""
    logits = _direct_logits(module, prompt + response)
    rows = logits[len(prompt) - 1 : len(prompt) + len(response) - 1] / t
    return rows.log_softmax(-1).gather(1, torch.tensor(response)[:, None]).squeeze(1)


def _lm(policy: FakePolicy) -> TinyGruLm:
    assert isinstance(policy.module, TinyGruLm)
    return policy.module


def test_is_a_policy_and_seeded() -> None:
    policy = FakePolicy(seed=1)
    assert isinstance(policy, Policy)
    state = torch.random.get_rng_state()
    same, other = FakePolicy(seed=1), FakePolicy(seed=2)
    assert torch.equal(torch.random.get_rng_state(), state)  # global RNG untouched
    for (name, a), (_, b), (_, c) in zip(
        policy.module.named_parameters(),
        same.module.named_parameters(),
        other.module.named_parameters(),
        strict=True,
    ):
        assert torch.equal(a, b), name
        assert not torch.equal(a, c), name


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_logprobs_match_direct_computation(temperature: float) -> None:
    policy = FakePolicy(seed=0)
    batch = make_sequence_batch(PROMPTS, RESPONSES)
    out = policy.forward(batch, temperature=temperature, with_entropy=True)
    assert out.logprobs.shape == (3, 4)
    assert out.entropy is not None and out.entropy.shape == (3, 4)
    for row, (prompt, response) in enumerate(zip(PROMPTS, RESPONSES, strict=True)):
        expected = _direct_logprobs(_lm(policy), prompt, response, temperature)
        torch.testing.assert_close(out.logprobs[row, : len(response)], expected)
        assert torch.all(out.logprobs[row, len(response) :] == 0)
        assert torch.all(out.entropy[row, len(response) :] == 0)
    assert torch.all(out.logprobs <= 0)


def test_entropy_matches_direct_computation() -> None:
    policy = FakePolicy(seed=0)
    batch = make_sequence_batch(PROMPTS[:1], RESPONSES[:1])
    out = policy.forward(batch, with_entropy=True)
    logits = _direct_logits(_lm(policy), PROMPTS[0] + RESPONSES[0])[2:4]
    p = logits.softmax(-1)
    expected = -(p * p.log()).sum(-1)
    assert out.entropy is not None
    torch.testing.assert_close(out.entropy[0], expected)
    assert policy.forward(batch).entropy is None


def test_prompt_and_response_padding_change_nothing() -> None:
    policy = FakePolicy(seed=0)
    tight = policy.forward(make_sequence_batch(PROMPTS, RESPONSES)).logprobs
    padded = policy.forward(
        make_sequence_batch(PROMPTS, RESPONSES, prompt_padding=3, response_padding=2)
    ).logprobs
    torch.testing.assert_close(padded[:, :4], tight)
    assert torch.all(padded[:, 4:] == 0)
    alone = policy.forward(make_sequence_batch(PROMPTS[1:2], RESPONSES[1:2])).logprobs
    torch.testing.assert_close(alone[0], tight[1])


def test_padding_token_values_do_not_matter() -> None:
    policy = FakePolicy(seed=0)
    batch = make_sequence_batch(PROMPTS, RESPONSES, prompt_padding=1)
    garbage = batch.input_ids.masked_fill(batch.attention_mask == 0, 13)
    other = type(batch)(garbage, batch.attention_mask, batch.response_mask)
    torch.testing.assert_close(policy.forward(other).logprobs, policy.forward(batch).logprobs)


def test_gradients_flow_only_under_grad_mode() -> None:
    policy = FakePolicy(seed=0)
    batch = make_sequence_batch(PROMPTS, RESPONSES)
    torch.autograd.backward(policy.forward(batch).logprobs.sum())
    head = _lm(policy).head.weight
    assert head.grad is not None and head.grad.abs().sum() > 0
    with torch.no_grad():
        assert not policy.forward(batch).logprobs.requires_grad


def test_needs_a_prompt_column() -> None:
    policy = FakePolicy()
    batch = make_sequence_batch([[2]], [[3, 1]])
    bad = type(batch)(batch.input_ids[:, 1:], batch.attention_mask[:, 1:], batch.response_mask)
    with pytest.raises(ValueError, match="prompt column"):
        policy.forward(bad)


def test_weights_for_sync_passes_tensors_through() -> None:
    policy = FakePolicy()
    named = [(n, p.detach().clone()) for n, p in policy.module.named_parameters()]
    synced = list(policy.weights_for_sync(iter(named)))
    assert [n for n, _ in synced] == [n for n, _ in named]
    assert all(a is b for (_, a), (_, b) in zip(synced, named, strict=True))
    assert policy.syncs_prepared == 1


def test_critic_values_layout_and_padding() -> None:
    critic = FakeCritic(seed=0)
    assert isinstance(critic, Critic)
    batch = make_sequence_batch(PROMPTS, RESPONSES)
    values = critic.values(batch)
    assert values.shape == (3, 4)
    for row, (prompt, response) in enumerate(zip(PROMPTS, RESPONSES, strict=True)):
        ids = torch.tensor(prompt + response)
        module = critic.module
        assert isinstance(module, TinyGruValueModel)
        states, _ = module.backbone.gru(module.backbone.embed(ids)[None])
        previous = module.backbone.embed(torch.tensor([0] + prompt + response[:-1]))
        direct = module.value_head(torch.cat([states[0], previous], -1)).squeeze(-1)
        # V_t is read at the column that predicts response token t
        expected = direct[len(prompt) - 1 : len(prompt) + len(response) - 1]
        torch.testing.assert_close(values[row, : len(response)], expected)
        assert torch.all(values[row, len(response) :] == 0)
    padded = critic.values(make_sequence_batch(PROMPTS, RESPONSES, prompt_padding=2))
    torch.testing.assert_close(padded, values)


def test_reference_is_a_frozen_copy_that_respects_offload() -> None:
    policy = FakePolicy(seed=0)
    reference = FakeReferenceModel(policy.module)
    assert isinstance(reference, ReferenceModel)
    batch = make_sequence_batch(PROMPTS, RESPONSES)
    before = policy.forward(batch).logprobs.detach()
    ref = reference.forward(batch)
    torch.testing.assert_close(ref.logprobs, before)
    assert not ref.logprobs.requires_grad
    with torch.no_grad():
        for p in policy.module.parameters():
            p.add_(0.5)
    torch.testing.assert_close(reference.forward(batch).logprobs, before)
    assert not any(p.requires_grad for p in reference.module.parameters())
    reference.offload()
    with pytest.raises(RuntimeError, match="offloaded"):
        reference.forward(batch)
    reference.onload()
    torch.testing.assert_close(reference.forward(batch).logprobs, before)
    assert (reference.offloads, reference.onloads, reference.forward_calls) == (1, 1, 3)
