"""Shared setup of the sharded-strategy tests (FSDP2, DeepSpeed): tiny Llama, deterministic
batches, loss, schedule, and the single-process reference run they must match.

Imported by the test modules (the single-process reference) and by the workers of the
2-rank runs, so both train the same model on the same data.
Shapes: B = 8 sequences of T = 10 tokens whose last R = 6 are the response.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn
from transformers import LlamaConfig, LlamaForCausalLM

from lightrft.domain.aggregation import LossNormalizer, aggregate
from lightrft.domain.ports import Collective
from lightrft.domain.types import OptimizerParams

VOCAB, B, T, R, MICRO = 64, 8, 10, 6, 2
STEPS = 5  # optimizer steps of the whole run
CKPT_AT = 3  # checkpoints are taken before step 3
OPTIM = OptimizerParams(
    lr=1e-2,
    weight_decay=0.1,
    max_grad_norm=0.5,
    warmup_steps=2,
    total_steps=6,
    schedule="cosine",
    min_lr_ratio=0.1,
)


def cosine(p: float) -> float:
    """0.1 + 0.9 (1 + cos(pi p)) / 2, the schedule after warmup (min_lr_ratio 0.1)."""
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p))


# warmup (s + 1) / 2 for s < 2, then cosine with progress (s - 2) / (6 - 2)
EXPECTED_LRS = [1e-2 * f for f in (0.5, 1.0, cosine(0.0), cosine(0.25), cosine(0.5))]


def tiny_model(seed: int = 0) -> LlamaForCausalLM:
    """A random 2-layer Llama (fp32), deterministic given ``seed``."""
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
    )
    return LlamaForCausalLM(config)


def global_batch(step: int) -> tuple[Tensor, Tensor]:
    """input_ids (B, T) and response_mask (B, R) of optimizer step ``step``.

    Response lengths differ per row, so the two halves hold different token counts.
    """
    gen = torch.Generator().manual_seed(1000 + step)
    input_ids = torch.randint(3, VOCAB, (B, T), generator=gen)
    lengths = torch.randint(1, R + 1, (B,), generator=gen)
    response_mask = torch.arange(R)[None, :] < lengths[:, None]  # [B, R]
    return input_ids, response_mask


def nll_loss(
    model: nn.Module, input_ids: Tensor, response_mask: Tensor, normalizer: LossNormalizer
) -> Tensor:
    """Token-mean negative log-likelihood of the response tokens (global denominator)."""
    logits = model(input_ids=input_ids).logits[:, -R - 1 : -1]  # [b, R, V], predicts response
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    token_logprobs = logprobs.gather(-1, input_ids[:, -R:, None]).squeeze(-1)  # [b, R]
    return aggregate(-token_logprobs, response_mask, "token-mean", normalizer)


def reference_run(steps: int = STEPS) -> tuple[dict[str, Tensor], list[float]]:
    """Plain torch on one process: the whole batch per step, clip_grad_norm_, AdamW with
    no decay on 1-D tensors. Returns the final state and the pre-clip norms."""
    model = tiny_model(0)
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(
        [
            {"params": [p for p in params if p.ndim >= 2], "weight_decay": OPTIM.weight_decay},
            {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
        ],
        lr=OPTIM.lr,
        betas=OPTIM.betas,
        eps=OPTIM.eps,
    )
    norms = []
    for step, lr in enumerate(EXPECTED_LRS[:steps]):
        input_ids, mask = global_batch(step)
        nll_loss(model, input_ids, mask, LossNormalizer.from_mask(mask)).backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(params, OPTIM.max_grad_norm)))
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.step()
        optimizer.zero_grad()
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return state, norms


def max_diff(a: dict[str, Tensor], b: dict[str, Tensor]) -> float:
    """Largest absolute difference over tensors of the same names (names must match)."""
    assert sorted(a) == sorted(b), (sorted(a), sorted(b))
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


def backward_batch(strategy: Any, coll: Collective, step: int, scale: float) -> None:
    """This rank's half of global batch ``step``, in micro-batches of MICRO rows.

    ``strategy`` is a prepared sharded strategy (FSDP2 or DeepSpeed) with its ``module``.
    """
    input_ids, mask = global_batch(step)
    half = input_ids.shape[0] // coll.world_size
    rows = slice(coll.rank * half, (coll.rank + 1) * half)
    input_ids, mask = input_ids[rows], mask[rows]
    normalizer = LossNormalizer.from_mask(mask, all_reduce_sum=coll.all_reduce_sum)
    for start in range(0, half, MICRO):
        micro = slice(start, start + MICRO)
        loss = nll_loss(strategy.module, input_ids[micro], mask[micro], normalizer)
        strategy.backward(loss * coll.world_size * scale)


__all__ = [
    "B",
    "CKPT_AT",
    "EXPECTED_LRS",
    "MICRO",
    "OPTIM",
    "R",
    "STEPS",
    "T",
    "VOCAB",
    "backward_batch",
    "cosine",
    "global_batch",
    "max_diff",
    "nll_loss",
    "reference_run",
    "tiny_model",
]
