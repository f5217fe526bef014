"""Token-budget micro-batches on a real (tiny) Llama: log-probs and gradients equal the
padded, fixed-count path in fp32, with prefix sharing, packing and the plain padded path."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.fakes import FakeCollective
from lightrft.adapters.hf import HfPolicy
from lightrft.application.batching import split_by_token_budget, trim_padding
from lightrft.application.params import TrainParams
from tests.helpers.token_budget_rig import train_once, uneven_experience
from tests.unit.adapters.hf.hf_tiny import tiny_model

LENGTHS = [5, 17, 2, 9, 12, 3, 20, 7]  # uneven answers, 4 groups of 2


@pytest.mark.parametrize(("sharing", "packing"), [("auto", False), ("off", False), ("off", True)])
def test_logprobs_of_trimmed_budget_micro_batches_equal_the_padded_batch(
    sharing: str, packing: bool
) -> None:
    exp = uneven_experience(LENGTHS, group_size=2, vocab=200)
    policy = HfPolicy(tiny_model(), prefix_sharing=sharing, packing=packing)  # type: ignore[arg-type]
    seq = exp.sequences
    with torch.no_grad():
        want = policy.forward(seq).logprobs
        got = torch.zeros_like(want)
        tokens = seq.attention_mask.sum(-1)
        batches = split_by_token_budget(
            torch.arange(len(LENGTHS)), tokens, 30, FakeCollective(), groups=exp.group_index
        )
        assert len(batches) >= 3
        widths = []
        for rows in batches:
            micro = trim_padding(seq.select(rows))
            widths.append(micro.input_ids.shape[1])
            got[rows, : micro.response_length] = policy.forward(micro).logprobs
        assert min(widths) < seq.input_ids.shape[1]  # short micro-batches run narrower
    torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-5)


@pytest.mark.parametrize("sharing", ["auto", "off"])
def test_gradients_equal_the_one_micro_batch_path(sharing: str) -> None:
    exp = uneven_experience(LENGTHS, group_size=2, vocab=200)

    def grad(params: TrainParams) -> torch.Tensor:
        policy = HfPolicy(tiny_model(), prefix_sharing=sharing)  # type: ignore[arg-type]
        return train_once(policy, exp, params)[0]

    whole = grad(TrainParams(micro_batch_size=len(LENGTHS)))
    for budget in (25, 60):
        torch.testing.assert_close(
            grad(TrainParams(max_tokens_per_micro_batch=budget)), whole, atol=2e-6, rtol=1e-4
        )
