"""HfReferenceModel: frozen, no autograd, offload/onload counted, same values as the policy."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.hf import HfPolicy, HfReferenceModel
from lightrft.domain.ports import ReferenceModel
from tests.unit.adapters.hf.hf_tiny import PROMPTS, RESPONSES, make_batch, tiny_model

CPU = torch.device("cpu")


def test_frozen_and_without_autograd() -> None:
    ref = HfReferenceModel(tiny_model().train(), CPU)
    assert isinstance(ref, ReferenceModel)
    assert not ref.module.training
    assert not any(p.requires_grad for p in ref.module.parameters())
    with torch.enable_grad():
        out = ref.forward(make_batch(PROMPTS, RESPONSES), with_entropy=True)
    assert out.logprobs.grad_fn is None and out.entropy is not None


@pytest.mark.parametrize("packing", [False, True])
def test_values_equal_the_policy(packing: bool) -> None:
    batch = make_batch(PROMPTS, RESPONSES)
    ref = HfReferenceModel(tiny_model(), CPU, packing=packing)
    with torch.no_grad():
        expected = HfPolicy(tiny_model()).forward(batch, temperature=0.5).logprobs
    torch.testing.assert_close(ref.forward(batch, temperature=0.5).logprobs, expected)


def test_offload_onload_round_trip() -> None:
    ref = HfReferenceModel(tiny_model(), CPU)
    batch = make_batch(PROMPTS, RESPONSES)
    before = ref.forward(batch).logprobs
    ref.offload()
    assert ref.is_offloaded and ref.offloads == 1
    assert all(p.device == CPU for p in ref.module.parameters())
    with pytest.raises(RuntimeError, match="offloaded"):
        ref.forward(batch)
    ref.onload()
    assert not ref.is_offloaded and ref.onloads == 1
    assert torch.equal(ref.forward(batch).logprobs, before)
