"""Contract of the ``ReferenceModel`` port. Append real implementations to ``IMPLEMENTATIONS``.

A factory returns a :class:`ReferenceSubject`: the reference model, the policy it was copied
from (same weights) and a few ordinary token ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

from lightrft.adapters.fakes import FakePolicy, FakeReferenceModel, make_sequence_batch
from lightrft.adapters.hf import HfPolicy, HfReferenceModel
from lightrft.domain.ports import Policy, ReferenceModel
from lightrft.domain.types import SequenceBatch
from tests.contract.real_adapters import CPU, ORDINARY_IDS, tiny_model


@dataclass
class ReferenceSubject:
    reference: ReferenceModel
    policy: Policy  # same initial weights as the reference
    token_ids: tuple[int, ...]
    atol: float = 1e-5


def make_fake_reference() -> ReferenceSubject:
    policy = FakePolicy(seed=0)
    return ReferenceSubject(FakeReferenceModel(policy.module), policy, tuple(range(3, 16)))


def make_hf_reference() -> ReferenceSubject:
    reference = HfReferenceModel(tiny_model(0), CPU)
    return ReferenceSubject(reference, HfPolicy(tiny_model(0)), ORDINARY_IDS)


def make_hf_packed_reference() -> ReferenceSubject:
    reference = HfReferenceModel(tiny_model(0), CPU, packing=True)
    return ReferenceSubject(reference, HfPolicy(tiny_model(0)), ORDINARY_IDS)


IMPLEMENTATIONS: list[object] = [
    pytest.param(make_fake_reference, id="fake"),
    pytest.param(make_hf_reference, id="hf"),
    pytest.param(make_hf_packed_reference, id="hf-packed"),
]


@pytest.fixture(params=IMPLEMENTATIONS)
def subject(request: pytest.FixtureRequest) -> ReferenceSubject:
    factory: Callable[[], ReferenceSubject] = request.param
    return factory()


def _batch(s: ReferenceSubject) -> SequenceBatch:
    t = s.token_ids
    return make_sequence_batch([[t[0], t[1]], [t[2]]], [[t[3], t[4]], [t[5]]])


def test_is_a_reference_model(subject: ReferenceSubject) -> None:
    assert isinstance(subject.reference, ReferenceModel)


def test_matches_the_policy_it_copies_without_autograd(subject: ReferenceSubject) -> None:
    batch = _batch(subject)
    out = subject.reference.forward(batch, with_entropy=True)
    assert out.logprobs.shape == (2, 2) and not out.logprobs.requires_grad
    assert out.entropy is not None and out.entropy.shape == (2, 2)
    assert out.logprobs[1, 1] == 0
    with torch.no_grad():
        expected = subject.policy.forward(batch).logprobs
    torch.testing.assert_close(out.logprobs, expected, atol=subject.atol, rtol=0)


def test_independent_of_later_policy_training(subject: ReferenceSubject) -> None:
    batch = _batch(subject)
    before = subject.reference.forward(batch).logprobs
    with torch.no_grad():
        for p in subject.policy.module.parameters():
            p.add_(0.1)
    torch.testing.assert_close(subject.reference.forward(batch).logprobs, before)


def test_offload_onload_round_trip(subject: ReferenceSubject) -> None:
    batch = _batch(subject)
    before = subject.reference.forward(batch).logprobs
    subject.reference.offload()
    subject.reference.onload()
    torch.testing.assert_close(subject.reference.forward(batch).logprobs, before)
