"""``SequenceBatch.to`` / ``Experience.to``: the experience is built on the host and moved to
the model's device at the forward (the ``meta`` device stands in for an accelerator here)."""

from __future__ import annotations

import torch

from lightrft.domain.types import Experience, SequenceBatch


def _batch() -> SequenceBatch:
    ids = torch.tensor([[0, 5, 6, 7], [4, 5, 6, 0]])
    attention = torch.tensor([[0, 1, 1, 1], [1, 1, 1, 0]])
    return SequenceBatch(ids, attention, torch.tensor([[1, 1], [1, 0]]), multimodal=())


def test_a_batch_moves_every_tensor_and_keeps_its_values() -> None:
    batch = _batch()
    assert batch.to("cpu") is batch  # already there: nothing copied
    moved = batch.to("meta")
    for name in ("input_ids", "attention_mask", "response_mask"):
        assert getattr(moved, name).device.type == "meta"
        assert getattr(moved, name).shape == getattr(batch, name).shape
    assert moved.response_length == 2


def test_an_experience_moves_every_tensor_field_and_leaves_none_alone() -> None:
    batch = _batch()
    exp = Experience(
        sequences=batch,
        old_logprobs=None,
        advantages=torch.tensor([[0.5, 0.5], [-0.5, 0.0]]),
        returns=torch.zeros(2, 2),
        rewards=torch.tensor([1.0, 0.0]),
        group_index=torch.tensor([0, 0]),
        ref_logprobs=torch.zeros(2, 2),
    )
    moved = exp.to("meta")
    assert moved.old_logprobs is None and moved.values is None
    for value in (moved.advantages, moved.returns, moved.rewards, moved.group_index):
        assert value.device.type == "meta"
    assert moved.ref_logprobs is not None and moved.ref_logprobs.device.type == "meta"
    assert moved.sequences.input_ids.device.type == "meta"
    back = exp.to("cpu")
    assert torch.equal(back.advantages, exp.advantages)
