"""Shared setup of the Ulysses sequence-parallel tests: a tiny Llama with 4 heads, one long
uneven batch (two prompts x two responses, about 500 tokens), the loss, and a measure of
the activation memory autograd keeps for backward."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn
from transformers import LlamaConfig, LlamaForCausalLM

from lightrft.adapters.fakes.batches import make_sequence_batch
from lightrft.domain.types import OptimizerParams, SequenceBatch

VOCAB = 128
# eps large against the gradients, so the first Adam step is smooth in g (with eps = 1e-8 it
# is lr * sign(g) and rounding on near-zero entries flips it)
OPTIM = OptimizerParams(lr=1e-2, eps=1e-3, weight_decay=0.0, max_grad_norm=None)
RESPONSE_LENGTHS = (150, 90, 200, 60)


def long_model(seed: int = 0) -> LlamaForCausalLM:
    """A random 2-layer Llama: hidden 64, 4 query heads, 2 key/value heads, fp32, eval."""
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        max_position_embeddings=1024,
    )
    config._attn_implementation = "sdpa"
    return LlamaForCausalLM(config).eval()


def long_batch() -> SequenceBatch:
    """Prompts A, A, B, B (12 and 7 tokens) with responses of RESPONSE_LENGTHS tokens."""
    gen = torch.Generator().manual_seed(7)
    a = torch.randint(3, VOCAB, (12,), generator=gen).tolist()
    b = torch.randint(3, VOCAB, (7,), generator=gen).tolist()
    responses = [torch.randint(3, VOCAB, (n,), generator=gen).tolist() for n in RESPONSE_LENGTHS]
    return make_sequence_batch([a, a, b, b], responses)


def token_weights(batch: SequenceBatch) -> Tensor:
    """Fixed per-token weights (B, R) in [-1, 1] for the test loss."""
    gen = torch.Generator().manual_seed(11)
    return torch.rand(batch.response_mask.shape, generator=gen) * 2 - 1


def sp_loss(logprobs: Tensor, entropy: Tensor, batch: SequenceBatch) -> Tensor:
    """Weighted token-mean of log-probs plus a small entropy term."""
    mask = batch.response_mask.float()
    value = -(logprobs * token_weights(batch) * mask).sum() + 0.01 * (entropy * mask).sum()
    return value / mask.sum()


def saved_activation_bytes(model: nn.Module, fn: Callable[[], Tensor]) -> tuple[Tensor, int]:
    """Runs ``fn`` (a forward) and sums the bytes of the distinct tensors autograd saves for
    backward, parameters excluded. Returns fn's result and that sum."""
    params = {p.data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: Tensor) -> Tensor:
        ptr = t.untyped_storage().data_ptr()
        if ptr not in params:
            seen[ptr] = max(seen.get(ptr, 0), t.untyped_storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return out, sum(seen.values())
