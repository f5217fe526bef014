"""Tests for lightrft.domain.linear_logprobs: equal to the LM head followed by
``token_logprobs`` in values and gradients, validation, and bounded memory."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor

from lightrft.domain.linear_logprobs import linear_token_logprobs
from lightrft.domain.token_logprobs import token_logprobs
from tests.helpers.live_bytes import LiveBytes

Inputs = tuple[Tensor, Tensor, Tensor | None, Tensor]


def random_inputs(
    rows: int, width: int, vocab: int, *, bias: bool, dtype: torch.dtype, seed: int = 0
) -> Inputs:
    gen = torch.Generator().manual_seed(seed)
    hidden = torch.randn(rows, width, generator=gen).to(dtype)
    weight = (torch.randn(vocab, width, generator=gen) * 0.7).to(dtype)
    b = torch.randn(vocab, generator=gen).to(dtype) if bias else None
    labels = torch.randint(0, vocab, (rows,), generator=gen)
    return hidden, weight, b, labels


def run(
    fused: bool,
    inputs: Inputs,
    upstream: tuple[Tensor | None, Tensor | None],
    **kwargs: Any,
) -> tuple[Tensor, Tensor | None, list[Tensor | None]]:
    """Values and grads (hidden, weight, bias) of sum(g_lp * logprobs + g_h * entropy),
    fused or the LM head then ``token_logprobs``."""
    hidden, weight, bias, labels = inputs
    leaves = [t.detach().clone().requires_grad_(True) for t in (hidden, weight)]
    b = None if bias is None else bias.detach().clone().requires_grad_(True)
    if fused:
        out = linear_token_logprobs(leaves[0], leaves[1], b, labels, **kwargs)
        lp, ent = out.logprobs, out.entropy
    else:
        logits = torch.nn.functional.linear(leaves[0], leaves[1], b)[None]
        ref = token_logprobs(logits, labels[None], **kwargs)
        lp, ent = ref.logprobs[0], None if ref.entropy is None else ref.entropy[0]
    loss = lp.sum() * 0
    g_lp, g_h = upstream
    if g_lp is not None:
        loss = loss + (lp * g_lp).sum()
    if g_h is not None and ent is not None:
        loss = loss + (ent * g_h).sum()
    loss.backward()
    grads = [leaves[0].grad, leaves[1].grad, None if b is None else b.grad]
    return lp.detach(), None if ent is None else ent.detach(), grads


def assert_same(fused: Any, unfused: Any, atol: float) -> None:
    for a, b in zip(tree(fused), tree(unfused), strict=True):
        if a is None or b is None:
            assert a is None and b is None
        else:
            assert a.dtype == b.dtype
            torch.testing.assert_close(a, b, atol=atol, rtol=atol)


def tree(value: Any) -> list[Tensor | None]:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in tree(item)]
    return [value]


# ---------------------------------------------------------------- equal to the unfused path


@pytest.mark.parametrize("chunk_size", [1, 3, 10, 64])  # K = 10: divides or not, one chunk
@pytest.mark.parametrize("temperature", [1.0, 0.7])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("with_entropy", [False, True])
def test_matches_unfused_fp32(
    chunk_size: int, temperature: float, bias: bool, with_entropy: bool
) -> None:
    inputs = random_inputs(10, 8, 37, bias=bias, dtype=torch.float32)
    gen = torch.Generator().manual_seed(3)
    upstream = (torch.randn(10, generator=gen), torch.randn(10, generator=gen))
    kwargs = {"temperature": temperature, "with_entropy": with_entropy, "chunk_size": chunk_size}
    assert_same(run(True, inputs, upstream, **kwargs), run(False, inputs, upstream, **kwargs), 1e-5)


@pytest.mark.parametrize("which", ["logprobs", "entropy"])
def test_gradient_from_one_output_only(which: str) -> None:
    inputs = random_inputs(9, 6, 23, bias=True, dtype=torch.float32)
    g = torch.randn(9, generator=torch.Generator().manual_seed(4))
    upstream = (g, None) if which == "logprobs" else (None, g)
    kwargs = {"temperature": 1.3, "with_entropy": True, "chunk_size": 4}
    assert_same(run(True, inputs, upstream, **kwargs), run(False, inputs, upstream, **kwargs), 1e-5)


def test_matches_unfused_bf16() -> None:
    # the head's matmul runs in bf16 on both paths, then the chunk is upcast to float32
    inputs = random_inputs(12, 16, 50, bias=False, dtype=torch.bfloat16)
    gen = torch.Generator().manual_seed(5)
    upstream = (torch.randn(12, generator=gen), torch.randn(12, generator=gen))
    kwargs = {"with_entropy": True, "chunk_size": 5}
    fused, unfused = run(True, inputs, upstream, **kwargs), run(False, inputs, upstream, **kwargs)
    assert_same(fused[:2], unfused[:2], 1e-5)
    assert_same(fused[2], unfused[2], 2e-2)  # bf16 gradients, summed in another order


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(0, 9),
    width=st.integers(1, 6),
    vocab=st.integers(1, 20),
    chunk_size=st.integers(1, 12),
    temperature=st.floats(0.25, 4.0),
    bias=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_property_matches_unfused(
    rows: int, width: int, vocab: int, chunk_size: int, temperature: float, bias: bool, seed: int
) -> None:
    inputs = random_inputs(rows, width, vocab, bias=bias, dtype=torch.float64, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    upstream = (
        torch.randn(rows, generator=gen, dtype=torch.float64),
        torch.randn(rows, generator=gen, dtype=torch.float64),
    )
    kwargs = {"temperature": temperature, "with_entropy": True, "chunk_size": chunk_size}
    assert_same(run(True, inputs, upstream, **kwargs), run(False, inputs, upstream, **kwargs), 1e-9)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("with_entropy", [False, True])
def test_gradcheck_float64(bias: bool, with_entropy: bool) -> None:
    hidden, weight, b, labels = random_inputs(7, 4, 9, bias=bias, dtype=torch.float64)
    tensors = [t.requires_grad_(True) for t in (hidden, weight, b) if t is not None]

    def fn(*args: Tensor) -> tuple[Tensor, ...]:
        out = linear_token_logprobs(
            args[0],
            args[1],
            args[2] if bias else None,
            labels,
            temperature=0.8,
            with_entropy=with_entropy,
            chunk_size=3,
        )
        return (out.logprobs,) if out.entropy is None else (out.logprobs, out.entropy)

    assert torch.autograd.gradcheck(fn, tuple(tensors))


def test_frozen_weight_gets_no_gradient() -> None:
    hidden, weight, bias, labels = random_inputs(5, 4, 11, bias=True, dtype=torch.float32)
    leaf = hidden.clone().requires_grad_(True)
    out = linear_token_logprobs(leaf, weight, bias, labels, chunk_size=2)
    out.logprobs.sum().backward()
    assert leaf.grad is not None and weight.grad is None and bias is not None
    assert bias.grad is None
    expected = run(False, (hidden, weight, bias, labels), (torch.ones(5), None), chunk_size=2)
    torch.testing.assert_close(leaf.grad, expected[2][0], atol=1e-5, rtol=1e-5)


def test_no_grad_and_empty_rows() -> None:
    hidden, weight, _, labels = random_inputs(0, 4, 11, bias=False, dtype=torch.float32)
    out = linear_token_logprobs(hidden, weight, None, labels, with_entropy=True)
    assert out.logprobs.shape == (0,) and out.entropy is not None and out.entropy.shape == (0,)
    hidden, weight, _, labels = random_inputs(3, 4, 11, bias=False, dtype=torch.float32)
    with torch.no_grad():
        lp = linear_token_logprobs(hidden, weight, None, labels).logprobs
    assert lp.shape == (3,) and bool((lp <= 0).all())


# ---------------------------------------------------------------- validation

_H, _W, _Y = torch.zeros(2, 3), torch.zeros(5, 3), torch.tensor([0, 4])
_BAD: list[tuple[dict[str, Any], str]] = [
    ({"hidden": torch.zeros(1, 2, 3)}, r"hidden must have shape \(\*, \*\)"),
    ({"weight": torch.zeros(5, 4)}, r"weight must have shape \(\*, 3\)"),
    ({"weight": torch.zeros(0, 3), "labels": torch.tensor([0, 0])}, "empty vocabulary"),
    ({"bias": torch.zeros(4)}, r"bias must have shape \(5\)"),
    ({"bias": torch.zeros(5, dtype=torch.float64)}, "bias has dtype torch.float64"),
    ({"hidden": torch.zeros(2, 3, dtype=torch.long)}, "hidden must be a floating point"),
    ({"labels": torch.tensor([0])}, r"labels must have shape \(2\)"),
    ({"labels": torch.tensor([0.0, 1.0])}, "labels must be an integer tensor"),
    ({"labels": torch.tensor([0, 5])}, r"labels must lie in \[0, 5\) .*weight"),
    ({"temperature": 0.0}, "temperature"),
    ({"temperature": math.inf}, "temperature"),
    ({"chunk_size": 0}, "chunk_size"),
]


@pytest.mark.parametrize(("change", "message"), _BAD)
def test_bad_inputs_name_the_problem(change: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"hidden": _H, "weight": _W, "bias": None, "labels": _Y}
    args.update(change)
    kwargs = {k: args.pop(k) for k in ("temperature", "chunk_size") if k in args}
    with pytest.raises((ValueError, TypeError), match=message):
        linear_token_logprobs(
            args["hidden"], args["weight"], args["bias"], args["labels"], **kwargs
        )


# ---------------------------------------------------------------- memory


def peak_bytes(fused: bool, inputs: Inputs, chunk_size: int) -> int:
    hidden, weight, bias, labels = inputs
    leaves = [t.clone().requires_grad_(True) for t in (hidden, weight)]
    g = torch.randn(labels.shape, generator=torch.Generator().manual_seed(9))
    tracker = LiveBytes(*leaves, labels, g)
    with tracker:
        if fused:
            out = linear_token_logprobs(
                leaves[0], leaves[1], bias, labels, with_entropy=True, chunk_size=chunk_size
            )
            lp, ent = out.logprobs, out.entropy
        else:
            logits = torch.nn.functional.linear(leaves[0], leaves[1])[None]
            ref = token_logprobs(logits, labels[None], with_entropy=True, chunk_size=chunk_size)
            lp, ent = ref.logprobs[0], ref.entropy
        assert ent is not None
        ((lp * g).sum() + ent.sum()).backward()
    return tracker.peak


def test_peak_memory_is_bounded_by_chunks() -> None:
    # K = 256 rows, V = 2048: the float32 logits (K, V) are 2 MiB and so is their gradient;
    # the fused path holds a few (8, V) chunks plus the weight's gradient (V, E).
    rows, width, vocab = 256, 16, 2048
    inputs = random_inputs(rows, width, vocab, bias=False, dtype=torch.float32)
    full_logits = rows * vocab * 4
    assert peak_bytes(False, inputs, 8) > full_logits, "the check must catch the unfused path"
    assert peak_bytes(True, inputs, 8) < full_logits // 4
