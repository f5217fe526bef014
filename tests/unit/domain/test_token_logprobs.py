"""Tests for lightrft.domain.token_logprobs: values, gradients, validation and memory."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor

from lightrft.domain.token_logprobs import TokenLogprobs, token_logprobs
from tests.helpers.live_bytes import LiveBytes

Outputs = tuple[Tensor, Tensor]


def naive(logits: Tensor, labels: Tensor, temperature: float = 1.0) -> Outputs:
    """The reference: a full float32 log-softmax. Shape: (B, T, V), (B, T) -> (B, T) x 2."""
    log_p = torch.log_softmax(
        logits.to(torch.promote_types(logits.dtype, torch.float32)) / temperature, -1
    )
    return log_p.gather(-1, labels[..., None]).squeeze(-1), -(log_p.exp() * log_p).sum(-1)


def chunked(chunk_size: int, temperature: float = 1.0) -> Callable[[Tensor, Tensor], Outputs]:
    def run(logits: Tensor, labels: Tensor) -> Outputs:
        out = token_logprobs(
            logits, labels, temperature=temperature, with_entropy=True, chunk_size=chunk_size
        )
        assert out.entropy is not None
        return out.logprobs, out.entropy

    return run


def values_and_grad(
    fn: Callable[[Tensor, Tensor], Outputs],
    logits: Tensor,
    labels: Tensor,
    g_lp: Tensor | None,
    g_h: Tensor | None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Runs fn on a fresh leaf copy of logits and backprops sum(g_lp * lp + g_h * H)."""
    leaf = logits.detach().clone().requires_grad_(True)
    lp, h = fn(leaf, labels)
    loss = torch.zeros(())
    if g_lp is not None:
        loss = loss + (lp * g_lp).sum()
    if g_h is not None:
        loss = loss + (h * g_h).sum()
    loss.backward()
    assert leaf.grad is not None
    return lp.detach(), h.detach(), leaf.grad


def random_case(
    shape: tuple[int, int, int],
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
    scale: float = 3.0,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    gen = torch.Generator().manual_seed(seed)
    b, t, v = shape
    logits = (torch.randn(shape, generator=gen) * scale).to(dtype)
    labels = torch.randint(0, v, (b, t), generator=gen)
    return logits, labels, torch.randn(b, t, generator=gen), torch.randn(b, t, generator=gen)


# ---------------------------------------------------------------- hand-computed values


def test_two_token_vocabulary_by_hand() -> None:
    # z = (0, ln 3): p = (1/4, 3/4). logp(label 1) = ln(3/4) = -0.28768.
    # H = -(1/4 ln 1/4 + 3/4 ln 3/4) = 0.34657 + 0.21576 = 0.56233.
    # temperature 2 on logits (0, 2 ln 3) gives the same z.
    logits = torch.tensor([[[0.0, 2 * math.log(3.0)]]], requires_grad=True)
    out = token_logprobs(logits, torch.tensor([[1]]), temperature=2.0, with_entropy=True)
    assert out.entropy is not None
    torch.testing.assert_close(out.logprobs, torch.tensor([[math.log(0.75)]]))
    torch.testing.assert_close(out.entropy, torch.tensor([[0.5623351]]))
    # d logp / d z = onehot - p = (-1/4, 1/4); times 1/temperature = (-1/8, 1/8).
    # d H / d z_j = -p_j (log p_j + H):
    #   j=0: -(1/4)(-1.38629 + 0.56234) = 0.20599;  j=1: -(3/4)(-0.28768 + 0.56234) = -0.20599
    #   times 1/temperature = (0.10299, -0.10299). Sum of both: (-0.02201, 0.02201).
    (out.logprobs.sum() + out.entropy.sum()).backward()
    assert logits.grad is not None
    torch.testing.assert_close(logits.grad, torch.tensor([[[-0.0220084, 0.0220084]]]))


def test_uniform_distribution_by_hand() -> None:
    # V = 4 equal logits: logp = -ln 4 = -1.38629, H = ln 4 (the maximum), so dH/dz = 0;
    # d logp(label 2) / dz = onehot - 1/4 = (-0.25, -0.25, 0.75, -0.25).
    logits = torch.full((1, 1, 4), 5.0, requires_grad=True)
    out = token_logprobs(logits, torch.tensor([[2]]), with_entropy=True)
    assert out.entropy is not None
    torch.testing.assert_close(out.logprobs, torch.tensor([[-math.log(4.0)]]))
    torch.testing.assert_close(out.entropy, torch.tensor([[math.log(4.0)]]))
    out.entropy.sum().backward(retain_graph=True)
    assert logits.grad is not None
    torch.testing.assert_close(logits.grad, torch.zeros(1, 1, 4))
    logits.grad = None
    out.logprobs.sum().backward()
    torch.testing.assert_close(logits.grad, torch.tensor([[[-0.25, -0.25, 0.75, -0.25]]]))


# ---------------------------------------------------------------- against the naive reference


@pytest.mark.parametrize("chunk_size", [1, 4, 15, 1000])  # 4 does not divide B*T = 15
@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_matches_naive_fp32(chunk_size: int, temperature: float) -> None:
    logits, labels, g_lp, g_h = random_case((3, 5, 37))
    got = values_and_grad(chunked(chunk_size, temperature), logits, labels, g_lp, g_h)
    want = values_and_grad(lambda z, y: naive(z, y, temperature), logits, labels, g_lp, g_h)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("chunk_size", [1, 4, 64])
def test_matches_naive_bf16(chunk_size: int) -> None:
    logits, labels, g_lp, g_h = random_case((3, 5, 37), dtype=torch.bfloat16)
    lp, h, grad = values_and_grad(chunked(chunk_size, 0.8), logits, labels, g_lp, g_h)
    want_lp, want_h, want_grad = values_and_grad(
        lambda z, y: naive(z, y, 0.8), logits, labels, g_lp, g_h
    )
    assert lp.dtype == torch.float32 and h.dtype == torch.float32
    assert grad.dtype == torch.bfloat16
    torch.testing.assert_close(lp, want_lp, rtol=1e-5, atol=1e-5)  # same upcast inputs
    torch.testing.assert_close(h, want_h, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grad.float(), want_grad.float(), rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("which", ["logprobs", "entropy"])
def test_gradient_from_one_output_only(which: str) -> None:
    logits, labels, g_lp, g_h = random_case((2, 4, 9), seed=3)
    g_lp_or_none = g_lp if which == "logprobs" else None
    g_h_or_none = g_h if which == "entropy" else None
    got = values_and_grad(chunked(3), logits, labels, g_lp_or_none, g_h_or_none)
    want = values_and_grad(naive, logits, labels, g_lp_or_none, g_h_or_none)
    torch.testing.assert_close(got[2], want[2], rtol=1e-5, atol=1e-6)


def test_without_entropy() -> None:
    logits, labels, g_lp, _ = random_case((2, 3, 11), seed=4)
    leaf = logits.clone().requires_grad_(True)
    out = token_logprobs(leaf, labels, chunk_size=2)
    assert isinstance(out, TokenLogprobs) and out.entropy is None
    (out.logprobs * g_lp).sum().backward()
    _, _, want_grad = values_and_grad(naive, logits, labels, g_lp, None)
    torch.testing.assert_close(out.logprobs, naive(logits, labels)[0])
    assert leaf.grad is not None
    torch.testing.assert_close(leaf.grad, want_grad)


@pytest.mark.parametrize("layout", ["shifted", "transposed"])
def test_non_contiguous_logits(layout: str) -> None:
    gen = torch.Generator().manual_seed(5)
    if layout == "shifted":  # logits[:, :-1] cannot be viewed as (B*T, V)
        logits = torch.randn(3, 6, 13, generator=gen)[:, :-1]
    else:
        logits = torch.randn(5, 3, 13, generator=gen).transpose(0, 1)
    labels = torch.randint(0, 13, (3, 5), generator=gen)
    g_lp, g_h = torch.randn(3, 5, generator=gen), torch.randn(3, 5, generator=gen)
    got = values_and_grad(chunked(4), logits, labels, g_lp, g_h)  # chunks cross samples
    want = values_and_grad(naive, logits, labels, g_lp, g_h)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


@settings(max_examples=50, deadline=None)
@given(
    batch=st.integers(1, 3),
    tokens=st.integers(1, 6),
    vocab=st.integers(1, 12),
    temperature=st.floats(0.05, 10.0),
    scale=st.floats(0.0, 20.0),
    chunk_size=st.integers(1, 40),
    seed=st.integers(0, 2**16),
)
def test_property_matches_naive(
    batch: int,
    tokens: int,
    vocab: int,
    temperature: float,
    scale: float,
    chunk_size: int,
    seed: int,
) -> None:
    logits, labels, g_lp, g_h = random_case((batch, tokens, vocab), seed=seed, scale=scale)
    got = values_and_grad(chunked(chunk_size, temperature), logits, labels, g_lp, g_h)
    want = values_and_grad(lambda z, y: naive(z, y, temperature), logits, labels, g_lp, g_h)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
    assert bool((got[1] >= -1e-6).all()) and bool((got[1] <= math.log(vocab) + 1e-5).all())


def test_gradcheck_float64() -> None:
    gen = torch.Generator().manual_seed(6)
    logits = torch.randn(2, 3, 5, dtype=torch.float64, generator=gen, requires_grad=True)
    labels = torch.randint(0, 5, (2, 3), generator=gen)

    def fn(z: Tensor) -> tuple[Tensor, Tensor]:
        out = token_logprobs(z, labels, temperature=0.7, with_entropy=True, chunk_size=4)
        assert out.entropy is not None
        return out.logprobs, out.entropy

    assert fn(logits)[0].dtype == torch.float64
    assert torch.autograd.gradcheck(fn, (logits,), eps=1e-6, atol=1e-6)


# ---------------------------------------------------------------- padding and edge values


def test_non_finite_row_does_not_leak() -> None:
    # Row (0, 1) is padding holding NaN/inf; the loss masks it (upstream gradient 0).
    logits, labels, g_lp, g_h = random_case((2, 3, 7), seed=7)
    bad = logits.clone()
    bad[0, 1, 0], bad[0, 1, 3] = float("nan"), float("inf")
    g_lp[0, 1], g_h[0, 1] = 0.0, 0.0
    lp, h, grad = values_and_grad(chunked(2), bad, labels, g_lp, g_h)
    want_lp, want_h, want_grad = values_and_grad(chunked(2), logits, labels, g_lp, g_h)
    keep = torch.ones(2, 3, dtype=torch.bool)
    keep[0, 1] = False
    torch.testing.assert_close(lp[keep], want_lp[keep])
    torch.testing.assert_close(h[keep], want_h[keep])
    torch.testing.assert_close(grad, want_grad)  # padded row's gradient is exactly 0
    assert bool((grad[0, 1] == 0).all())


def test_minus_inf_logits_are_excluded_vocabulary() -> None:
    # logits (0, 0, -inf): p = (1/2, 1/2, 0); H = ln 2 (naive p*log p would give NaN);
    # logp(label 2) = -inf; gradients stay finite: d H / d z = 0 (uniform over the support).
    logits = torch.tensor([[[0.0, 0.0, -math.inf], [0.0, 0.0, -math.inf]]], requires_grad=True)
    out = token_logprobs(logits, torch.tensor([[0, 2]]), with_entropy=True, chunk_size=1)
    assert out.entropy is not None
    torch.testing.assert_close(out.entropy, torch.full((1, 2), math.log(2.0)))
    torch.testing.assert_close(out.logprobs.detach(), torch.tensor([[-math.log(2.0), -math.inf]]))
    out.entropy.sum().backward()
    assert logits.grad is not None
    torch.testing.assert_close(logits.grad, torch.zeros(1, 2, 3))


def test_empty_batch_and_no_grad() -> None:
    out = token_logprobs(
        torch.zeros(0, 3, 5), torch.zeros(0, 3, dtype=torch.long), with_entropy=True
    )
    assert out.logprobs.shape == (0, 3) and out.entropy is not None and out.entropy.shape == (0, 3)
    logits, labels, _, _ = random_case((2, 2, 4), dtype=torch.float16, seed=8)
    with torch.no_grad():
        lp = token_logprobs(logits, labels.int()).logprobs
    assert lp.dtype == torch.float32 and not lp.requires_grad
    torch.testing.assert_close(lp, naive(logits, labels)[0])


# ---------------------------------------------------------------- validation


_IDS = torch.zeros(1, 2, dtype=torch.long)
_BAD_INPUTS: list[tuple[Tensor, Tensor, dict[str, Any], str]] = [
    (torch.zeros(2, 5), _IDS, {}, "logits must have shape"),
    (torch.zeros(2, 3, 5), _IDS, {}, r"labels must have shape \(2, 3\), got \(1, 2\)"),
    (torch.zeros(1, 2, 5), _IDS.float(), {}, "labels must be an integer"),
    (torch.zeros(1, 2, 5, dtype=torch.long), _IDS, {}, "logits must be a floating"),
    (torch.zeros(1, 2, 0), _IDS, {}, "empty vocabulary"),
    (torch.zeros(1, 2, 5), torch.tensor([[0, -100]]), {}, r"in \[0, 5\).*-100 at index \(0, 1\)"),
    (torch.zeros(1, 2, 5), torch.tensor([[5, 0]]), {}, r"labels must lie in \[0, 5\)"),
    (torch.zeros(1, 2, 5), _IDS, {"temperature": 0.0}, "temperature"),
    (torch.zeros(1, 2, 5), _IDS, {"temperature": math.nan}, "temperature"),
    (torch.zeros(1, 2, 5), _IDS, {"chunk_size": 0}, "chunk_size"),
    (torch.zeros(1, 2, 5), _IDS, {"chunk_size": True}, "chunk_size"),
]


@pytest.mark.parametrize(("logits", "labels", "kwargs", "message"), _BAD_INPUTS)
def test_bad_inputs_name_the_problem(
    logits: Tensor, labels: Tensor, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        token_logprobs(logits, labels, **kwargs)


# ---------------------------------------------------------------- memory


def saved_full_float32(
    fn: Callable[[Tensor, Tensor], Outputs], logits: Tensor, labels: Tensor
) -> list[Tensor]:
    """Float32 tensors of >= B*T*V elements that autograd keeps for backward."""
    full = logits.numel()
    found: list[Tensor] = []

    def pack(t: Tensor) -> Tensor:
        if t.dtype == torch.float32 and t.numel() >= full:
            found.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(logits.clone().requires_grad_(True), labels)
    return found


def test_saves_no_full_float32_tensor_for_backward() -> None:
    logits, labels, _, _ = random_case((2, 16, 64), dtype=torch.bfloat16)
    assert saved_full_float32(naive, logits, labels), "the check must catch the naive version"
    assert saved_full_float32(chunked(8), logits, labels) == []


def peak_bytes(fn: Callable[[Tensor, Tensor], Outputs], logits: Tensor, labels: Tensor) -> int:
    leaf = logits.clone().requires_grad_(True)
    gen = torch.Generator().manual_seed(9)
    g_lp, g_h = torch.randn(labels.shape, generator=gen), torch.randn(labels.shape, generator=gen)
    tracker = LiveBytes(leaf, labels, g_lp, g_h)
    with tracker:
        lp, h = fn(leaf, labels)
        ((lp * g_lp).sum() + (h * g_h).sum()).backward()
    return tracker.peak


def test_peak_memory_is_bounded() -> None:
    # bf16 logits, N = B*T = 256 rows, V = 512: a float32 (N, V) copy is 512 KiB, the bf16
    # gradient (unavoidable) 256 KiB, one float32 chunk of 8 rows 16 KiB.
    logits, labels, _, _ = random_case((4, 64, 512), dtype=torch.bfloat16)
    full_fp32 = logits.numel() * 4
    bound = logits.numel() * 2 + full_fp32 // 4  # gradient + a quarter of one fp32 copy
    assert peak_bytes(naive, logits, labels) > bound, "the check must catch the naive version"
    assert peak_bytes(chunked(8), logits, labels) <= bound
