"""Seeds from a run's seed: stable digests, and seeded initializations that leave torch's
global random stream where it was."""

from __future__ import annotations

import hashlib

import pytest
import torch

from lightrft.adapters.model_parts.seeds import component_seed, row_seed, seeded_init


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") & (2**63 - 1)


def test_seeds_are_sha256_digests_of_the_seed_and_the_name() -> None:
    assert row_seed(7, "gsm8k:3", 1) == _digest("7:gsm8k:3:1")
    assert component_seed(7, "lora") == _digest("init:7:lora")
    assert component_seed(7, "lora") != component_seed(7, "critic.value_head")
    assert component_seed(7, "lora") != component_seed(8, "lora")


def test_a_seeded_block_draws_the_same_whatever_the_global_state() -> None:
    torch.manual_seed(1)
    with seeded_init(3, "lora"):
        first = torch.rand(5)
    torch.manual_seed(2)
    torch.rand(100)
    with seeded_init(3, "lora"):
        again = torch.rand(5)
    with seeded_init(3, "critic.value_head"):
        other = torch.rand(5)
    expected = torch.Generator().manual_seed(component_seed(3, "lora"))
    assert torch.equal(first, again)
    assert torch.equal(first, torch.rand(5, generator=expected))
    assert not torch.equal(first, other)


def test_a_seeded_block_leaves_the_global_stream_unchanged() -> None:
    torch.manual_seed(11)
    untouched = torch.rand(4)
    torch.manual_seed(11)
    with seeded_init(0, "lora", torch.device("cpu")):
        torch.rand(1000)  # an initialization drawing many numbers
    assert torch.equal(torch.rand(4), untouched)


@pytest.mark.gpu
def test_a_seeded_block_seeds_and_restores_the_cuda_generator_too() -> None:
    cuda = torch.device("cuda", 0)
    torch.cuda.manual_seed(11)
    untouched = torch.rand(4, device=cuda)
    torch.cuda.manual_seed(11)
    with seeded_init(0, "lora", cuda):
        first = torch.rand(5, device=cuda)
    assert torch.equal(torch.rand(4, device=cuda), untouched)
    torch.rand(100, device=cuda)
    with seeded_init(0, "lora", cuda):
        assert torch.equal(torch.rand(5, device=cuda), first)
