from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lightrft.domain.aggregation import AGG_MODES, LossNormalizer
from lightrft.domain.value_loss import entropy_loss, value_loss

F64 = torch.float64


def t(rows: list[list[float]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=F64)


def test_clipped_value_loss_hand_computed() -> None:
    values = t([[1.0, 2.0, float("nan")]]).requires_grad_(True)
    old, returns = t([[0.5, 2.0, 0.0]]), t([[2.0, 1.0, float("inf")]])
    out = value_loss(values, old, returns, torch.tensor([[1, 1, 0]]), clip_eps=0.2)
    # t0: (1 - 2)^2 = 1; clipped V = 0.5 + clamp(0.5, -0.2, 0.2) = 0.7 -> (0.7 - 2)^2 = 1.69
    # t1: (2 - 1)^2 = 1; clipped V = 2 -> 1;  t2 is padding
    # 0.5 * (1.69 + 1) / 2 = 0.6725
    assert out.loss.item() == pytest.approx(0.6725)
    assert out.metrics["value/clip_fraction"].item() == pytest.approx(0.5)
    assert out.metrics["value/mse"].item() == pytest.approx(1.0)
    assert out.metrics["value/values_mean"].item() == pytest.approx(1.5)
    out.loss.backward()
    # t0 uses the clipped branch: no gradient; t1: 0.5 * 2 (V - R) / 2 = 0.5; padding 0
    torch.testing.assert_close(values.grad, t([[0.0, 0.5, 0.0]]))


def test_unclipped_value_loss_hand_computed() -> None:
    values = t([[1.0, 2.0]]).requires_grad_(True)
    loss, metrics = value_loss(values, t([[0.5, 2.0]]), t([[2.0, 1.0]]), torch.ones(1, 2), None)
    # 0.5 * ((1 - 2)^2 + (2 - 1)^2) / 2 = 0.5
    assert loss.item() == pytest.approx(0.5)
    assert metrics["value/clip_fraction"].item() == 0.0
    loss.backward()
    # 0.5 * 2 (V - R) / 2 = (V - R) / 2 = (-0.5, 0.5)
    torch.testing.assert_close(values.grad, t([[-0.5, 0.5]]))


def test_entropy_bonus_hand_computed() -> None:
    entropy = t([[0.5, 1.5, float("nan")]]).requires_grad_(True)
    mask = torch.tensor([[1, 1, 0]])
    loss = entropy_loss(entropy, mask, coef=0.01)
    # -0.01 * (0.5 + 1.5) / 2 = -0.01
    assert loss.item() == pytest.approx(-0.01)
    loss.backward()
    # d/dH = -coef / N = -0.005 on kept tokens, 0 on padding
    torch.testing.assert_close(entropy.grad, t([[-0.005, -0.005, 0.0]]))
    # seq-mean-token-sum over one sequence: -0.01 * 2 = -0.02
    assert entropy_loss(entropy, mask, 0.01, "seq-mean-token-sum").item() == pytest.approx(-0.02)


def random_batch(seed: int, b: int, r: int) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    old = torch.randn(b, r, generator=gen, dtype=F64)
    values = old + 0.3 * torch.randn(b, r, generator=gen, dtype=F64)
    returns = torch.randn(b, r, generator=gen, dtype=F64)
    mask = torch.rand(b, r, generator=gen) < 0.7
    mask[torch.arange(b), torch.randint(0, r, (b,), generator=gen)] = True
    return values, old, returns, mask


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    b=st.integers(1, 4),
    r=st.integers(1, 5),
    fill=st.sampled_from((float("nan"), float("inf"), 1e30)),
    agg=st.sampled_from(AGG_MODES),
    clip=st.sampled_from((None, 0.2)),
)
def test_padding_never_changes_value_or_entropy_loss(
    seed: int, b: int, r: int, fill: float, agg: str, clip: float | None
) -> None:
    values, old, returns, mask = random_batch(seed, b, r)
    norm = LossNormalizer.from_mask(mask, max_response_length=r)

    def losses(pad: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        v = values.masked_fill(~mask, pad).requires_grad_(True)
        out = value_loss(
            v, old.masked_fill(~mask, pad), returns.masked_fill(~mask, pad), mask, clip, agg, norm
        )
        ent = entropy_loss(v, mask, 0.1, agg, norm)
        (g,) = torch.autograd.grad(out.loss + ent, v)
        return out.loss, ent, g, torch.stack(list(out.metrics.values()))

    for clean, dirty in zip(losses(0.0), losses(fill), strict=True):
        torch.testing.assert_close(dirty, clean)
    assert torch.all(losses(fill)[2][~mask] == 0)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31), b=st.integers(2, 6), r=st.integers(1, 5), split=st.integers(2, 3)
)
def test_value_micro_batches_accumulate_to_full_batch_gradient(
    seed: int, b: int, r: int, split: int
) -> None:
    values, old, returns, mask = random_batch(seed, b, r)
    norm = LossNormalizer.from_mask(mask, max_response_length=r)
    for agg in AGG_MODES:
        full = values.clone().requires_grad_(True)
        (
            value_loss(full, old, returns, mask, 0.2, agg, norm).loss
            + entropy_loss(full, mask, 0.1, agg, norm)
        ).backward()
        micro = values.clone().requires_grad_(True)
        for rows in torch.arange(b).tensor_split(min(split, b)):
            (
                value_loss(micro[rows], old[rows], returns[rows], mask[rows], 0.2, agg, norm).loss
                + entropy_loss(micro[rows], mask[rows], 0.1, agg, norm)
            ).backward()
        torch.testing.assert_close(micro.grad, full.grad)


def test_value_loss_errors_name_the_argument() -> None:
    ok, mask = t([[0.0, 1.0]]), torch.ones(1, 2)
    with pytest.raises(ValueError, match=r"returns has shape \(1, 3\) but values"):
        value_loss(ok, ok, t([[0.0, 0.0, 0.0]]), mask, 0.2)
    with pytest.raises(ValueError, match="returns contains a non-finite value"):
        value_loss(ok, ok, t([[0.0, float("nan")]]), mask, 0.2)
    with pytest.raises(ValueError, match="response_mask selects no token"):
        value_loss(ok, ok, ok, torch.zeros(1, 2), 0.2)
    with pytest.raises(ValueError, match="clip_eps must be a positive"):
        value_loss(ok, ok, ok, mask, 0.0)
    with pytest.raises(KeyError, match="valid choices: seq-mean-token-mean"):
        value_loss(ok, ok, ok, mask, 0.2, agg="mean")


def test_entropy_loss_errors_name_the_argument() -> None:
    ok = t([[0.0, 1.0]])
    with pytest.raises(ValueError, match="coef must be a non-negative"):
        entropy_loss(ok, torch.ones(1, 2), -0.1)
    with pytest.raises(ValueError, match=r"entropy must have shape \(\*, \*\), got \(2,\)"):
        entropy_loss(torch.zeros(2), torch.ones(2), 0.1)
    with pytest.raises(ValueError, match="entropy contains a non-finite value"):
        entropy_loss(t([[0.0, float("inf")]]), torch.ones(1, 2), 0.1)
