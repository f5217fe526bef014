"""Contract of the ``Policy`` port: every implementation must pass these.

Add an implementation by appending a factory to ``IMPLEMENTATIONS`` (mark GPU-only ones
with ``pytest.mark.gpu``). A factory returns a :class:`PolicySubject`: the policy and a few
ordinary token ids of its vocabulary (no pad/EOS/special ids).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
from torch import nn

from lightrft.adapters.fakes import FakePolicy, make_sequence_batch
from lightrft.adapters.hf import HfPolicy
from lightrft.domain.ports import Policy
from lightrft.domain.types import SequenceBatch
from tests.contract.real_adapters import ORDINARY_IDS, VOCAB_SIZE, lora_policy, tiny_model


@dataclass
class PolicySubject:
    policy: Policy
    token_ids: tuple[int, ...]  # at least 6 ordinary ids
    vocab_size: int
    atol: float = 1e-5  # tolerance of padding invariance (bf16 models need more)


def make_fake_policy() -> PolicySubject:
    return PolicySubject(FakePolicy(seed=0), token_ids=tuple(range(3, 16)), vocab_size=16)


def make_hf_policy() -> PolicySubject:
    return PolicySubject(HfPolicy(tiny_model(0)), ORDINARY_IDS, VOCAB_SIZE)


def make_hf_packed_policy() -> PolicySubject:
    return PolicySubject(HfPolicy(tiny_model(0), packing=True), ORDINARY_IDS, VOCAB_SIZE)


def make_hf_lora_policy() -> PolicySubject:
    return PolicySubject(lora_policy(0), ORDINARY_IDS, VOCAB_SIZE)


IMPLEMENTATIONS: list[object] = [
    pytest.param(make_fake_policy, id="fake"),
    pytest.param(make_hf_policy, id="hf-padded"),
    pytest.param(make_hf_packed_policy, id="hf-packed"),
    pytest.param(make_hf_lora_policy, id="hf-lora"),
]


@pytest.fixture(params=IMPLEMENTATIONS)
def subject(request: pytest.FixtureRequest) -> PolicySubject:
    factory: Callable[[], PolicySubject] = request.param
    return factory()


def _batch(s: PolicySubject, prompt_padding: int = 0, response_padding: int = 0) -> SequenceBatch:
    t = s.token_ids
    prompts = [[t[0], t[1], t[2]], [t[3]], [t[4], t[5]]]
    responses = [[t[1], t[2]], [t[0], t[5], t[3], t[4]], [t[2]]]
    return make_sequence_batch(
        prompts, responses, prompt_padding=prompt_padding, response_padding=response_padding
    )


def test_is_a_policy_with_a_module(subject: PolicySubject) -> None:
    assert isinstance(subject.policy, Policy)
    assert isinstance(subject.policy.module, nn.Module)


def test_shapes_signs_and_zero_padding(subject: PolicySubject) -> None:
    batch = _batch(subject)
    out = subject.policy.forward(batch, with_entropy=True)
    assert out.logprobs.shape == (3, 4)
    assert out.entropy is not None and out.entropy.shape == (3, 4)
    mask = batch.response_mask.bool().to(out.logprobs.device)
    assert torch.all(out.logprobs[mask] <= 0)
    assert torch.all(out.entropy[mask] >= 0)
    assert torch.all(out.logprobs[~mask] == 0) and torch.all(out.entropy[~mask] == 0)
    assert torch.isfinite(out.logprobs).all()
    assert subject.policy.forward(batch).entropy is None


def test_padding_changes_nothing(subject: PolicySubject) -> None:
    with torch.no_grad():
        tight = subject.policy.forward(_batch(subject)).logprobs
        padded = subject.policy.forward(_batch(subject, 2, 3)).logprobs
    torch.testing.assert_close(padded[:, :4], tight, atol=subject.atol, rtol=0)
    assert torch.all(padded[:, 4:] == 0)


def test_log_probs_of_every_next_token_sum_to_one(subject: PolicySubject) -> None:
    if subject.vocab_size > 4096:
        pytest.skip("vocabulary too large for an exhaustive check")
    t = subject.token_ids
    ids = list(range(subject.vocab_size))
    batch = make_sequence_batch([[t[0], t[1]]] * len(ids), [[v] for v in ids])
    for temperature in (1.0, 0.5):
        with torch.no_grad():
            lp = subject.policy.forward(batch, temperature=temperature).logprobs[:, 0]
        assert lp.double().exp().sum().item() == pytest.approx(1.0, abs=1e-4)


def test_temperature_sharpens(subject: PolicySubject) -> None:
    batch = _batch(subject)
    with torch.no_grad():
        warm = subject.policy.forward(batch, temperature=1.0, with_entropy=True).entropy
        cold = subject.policy.forward(batch, temperature=0.25, with_entropy=True).entropy
    assert warm is not None and cold is not None
    mask = batch.response_mask.bool().to(warm.device)
    assert torch.all(cold[mask] <= warm[mask] + 1e-5)


def test_autograd_follows_grad_mode(subject: PolicySubject) -> None:
    batch = _batch(subject)
    out = subject.policy.forward(batch)
    assert out.logprobs.requires_grad
    torch.autograd.backward(out.logprobs.sum())
    grads = [p.grad for p in subject.policy.module.parameters() if p.requires_grad]
    assert any(g is not None and g.abs().sum() > 0 for g in grads)
    with torch.no_grad():
        assert not subject.policy.forward(batch).logprobs.requires_grad


def test_weights_for_sync_names_and_shapes(subject: PolicySubject) -> None:
    module = subject.policy.module
    named = [(n, p.detach().clone()) for n, p in module.named_parameters()]
    synced = dict(subject.policy.weights_for_sync(iter(named)))
    assert synced
    assert all(isinstance(v, torch.Tensor) for v in synced.values())
    shapes = {n: tuple(p.shape) for n, p in named}
    for name, tensor in synced.items():
        if name in shapes:
            assert tuple(tensor.shape) == shapes[name]
