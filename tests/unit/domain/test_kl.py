from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lightrft.domain.aggregation import LossNormalizer
from lightrft.domain.kl import (
    KL_CONTROLLERS,
    KL_ESTIMATORS,
    AdaptiveKLController,
    FixedKLController,
    kl_estimate,
    kl_in_reward,
    kl_loss,
    make_kl_controller,
)

NAN = float("nan")
INF = float("inf")

# Delta = logprobs - ref = [0.5, -1.0]
LOGPROBS = torch.tensor([[-1.0, -2.0]])
REF = torch.tensor([[-1.5, -1.0]])
FULL = torch.ones(1, 2)


def test_registry_names() -> None:
    assert KL_ESTIMATORS.names() == ("k1", "k2", "k3")
    assert KL_CONTROLLERS.names() == ("adaptive", "fixed")


def test_k1_hand_computed() -> None:
    # k1 = Delta = [0.5, -1.0]
    torch.testing.assert_close(kl_estimate("k1", LOGPROBS, REF, FULL), torch.tensor([[0.5, -1.0]]))


def test_k2_hand_computed() -> None:
    # k2 = Delta^2 / 2 = [0.25 / 2, 1 / 2] = [0.125, 0.5]
    torch.testing.assert_close(kl_estimate("k2", LOGPROBS, REF, FULL), torch.tensor([[0.125, 0.5]]))


def test_k3_hand_computed() -> None:
    # k3 = exp(-Delta) - 1 + Delta:
    #   Delta = 0.5:  exp(-0.5) - 1 + 0.5 = 0.60653066 - 0.5 = 0.10653066
    #   Delta = -1.0: exp(1) - 1 - 1      = 2.71828183 - 2   = 0.71828183
    expected = torch.tensor([[0.10653066, 0.71828183]])
    torch.testing.assert_close(kl_estimate("k3", LOGPROBS, REF, FULL), expected)


def test_k3_clamps_delta_and_result() -> None:
    logprobs = torch.tensor([[30.0, -30.0, 3.0]])
    ref = torch.zeros(1, 3)
    # Delta 30 -> 20: exp(-20) - 1 + 20 = 19.000000002 -> clamped to 10
    # Delta -30 -> -20: exp(20) - 1 - 20 = 4.85e8 -> clamped to 10 (finite, not inf)
    # Delta 3: exp(-3) - 1 + 3 = 0.04978707 + 2 = 2.04978707 (unclamped)
    out = kl_estimate("k3", logprobs, ref, torch.ones(1, 3))
    torch.testing.assert_close(out, torch.tensor([[10.0, 10.0, 2.04978707]]))
    # The clamp on Delta stops the gradient of the clamped tokens.
    logprobs.requires_grad_(True)
    kl_estimate("k3", logprobs, ref, torch.ones(1, 3)).sum().backward()
    assert logprobs.grad is not None
    # d/dDelta (exp(-Delta) - 1 + Delta) = 1 - exp(-3) = 0.95021293 at Delta = 3
    torch.testing.assert_close(logprobs.grad, torch.tensor([[0.0, 0.0, 0.95021293]]))


def test_kl_estimate_zeroes_padding_and_keeps_gradient_finite() -> None:
    logprobs = torch.tensor([[-1.0, NAN], [INF, -2.0]], requires_grad=True)
    ref = torch.tensor([[-1.5, -INF], [NAN, -1.0]])
    mask = torch.tensor([[1, 0], [0, 1]])
    for name in KL_ESTIMATORS:
        out = kl_estimate(name, logprobs, ref, mask)
        assert out[0, 1].item() == 0.0 and out[1, 0].item() == 0.0
        assert torch.isfinite(out).all()
        (grad,) = torch.autograd.grad(out.sum(), logprobs)
        assert torch.isfinite(grad).all()
        assert grad[0, 1].item() == 0.0 and grad[1, 0].item() == 0.0


def test_kl_estimate_bad_inputs() -> None:
    with pytest.raises(KeyError, match="valid choices: k1, k2, k3"):
        kl_estimate("k4", LOGPROBS, REF, FULL)
    with pytest.raises(ValueError, match=r"ref_logprobs has shape \(1, 3\) but logprobs has"):
        kl_estimate("k1", LOGPROBS, torch.zeros(1, 3), FULL)
    with pytest.raises(ValueError, match=r"logprobs must have shape \(\*, \*\), got \(2,\)"):
        kl_estimate("k1", torch.zeros(2), torch.zeros(2), torch.ones(2))
    with pytest.raises(ValueError, match="response_mask selects no token"):
        kl_estimate("k1", LOGPROBS, REF, torch.zeros(1, 2))


def test_kl_in_reward_hand_computed() -> None:
    kl = torch.tensor([[0.5, 1.0, NAN]])
    mask = torch.tensor([[1, 1, 0]])
    # -0.1 * [0.5, 1.0] = [-0.05, -0.1]; padding -> 0 even though it holds NaN
    torch.testing.assert_close(kl_in_reward(kl, mask, 0.1), torch.tensor([[-0.05, -0.1, 0.0]]))
    with pytest.raises(ValueError, match="coef must be a non-negative finite number"):
        kl_in_reward(kl, mask, -1.0)
    with pytest.raises(ValueError, match="response_mask has shape"):
        kl_in_reward(kl, torch.ones(1, 2), 0.1)


def test_kl_loss_hand_computed() -> None:
    logprobs = torch.tensor([[-1.0, -2.0], [0.0, 0.0]], requires_grad=True)
    ref = torch.tensor([[-1.5, -1.0], [0.0, NAN]])
    mask = torch.tensor([[1, 1], [1, 0]])
    # k3 = [[0.10653066, 0.71828183], [0 (Delta 0), padding]]
    # token-mean: (0.10653066 + 0.71828183 + 0) / 3 = 0.27493750; loss = 0.5 * that
    out = kl_loss(logprobs, ref, mask, "k3", 0.5, "token-mean")
    assert out.loss.item() == pytest.approx(0.5 * 0.27493750, rel=1e-6)
    assert out.metrics["kl"].item() == pytest.approx(0.27493750, rel=1e-6)
    assert out.metrics["kl_loss"].item() == pytest.approx(0.13746875, rel=1e-6)
    assert not out.metrics["kl"].requires_grad and out.loss.requires_grad
    # seq-mean-token-mean: row means 0.41240625 and 0 -> (0.41240625 + 0) / 2 = 0.20620312
    out = kl_loss(logprobs, ref, mask, "k3", 1.0, "seq-mean-token-mean")
    assert out.loss.item() == pytest.approx(0.20620312, rel=1e-6)
    with pytest.raises(KeyError, match="valid choices: seq-mean-token-mean"):
        kl_loss(logprobs, ref, mask, "k3", 1.0, "mean")


def test_kl_loss_micro_batches_with_global_normalizer_sum_to_full_batch() -> None:
    gen = torch.Generator().manual_seed(0)
    logprobs = -torch.rand(4, 5, generator=gen)
    ref = -torch.rand(4, 5, generator=gen)
    mask = (torch.rand(4, 5, generator=gen) > 0.3).int()
    mask[:, 0] = 1
    norm = LossNormalizer.from_mask(mask)
    full = kl_loss(logprobs, ref, mask, "k2", 0.3, "token-mean", norm).loss
    halves = [slice(0, 2), slice(2, 4)]
    parts = [kl_loss(logprobs[h], ref[h], mask[h], "k2", 0.3, "token-mean", norm) for h in halves]
    torch.testing.assert_close(parts[0].loss + parts[1].loss, full)


def test_adaptive_controller_trajectory() -> None:
    ctl = AdaptiveKLController(value=0.1, target=6.0, horizon=10000)
    # KL 12: e = 12/6 - 1 = 1 -> clipped 0.2; beta = 0.1 * (1 + 0.2 * 256 / 10000) = 0.100512
    ctl = ctl.update(12.0, 256)
    assert ctl.value == pytest.approx(0.100512)
    # KL 6.3: e = 0.05; beta = 0.100512 * (1 + 0.05 * 256 / 10000) = 0.100512 * 1.00128
    ctl = ctl.update(6.3, 256)
    assert ctl.value == pytest.approx(0.100512 * 1.00128)
    # KL 0: e = -1 -> clipped -0.2; factor 1 - 0.2 * 256 / 10000 = 0.99488
    ctl = ctl.update(0.0, 256)
    assert ctl.value == pytest.approx(0.100512 * 1.00128 * 0.99488)
    # n = 0 samples: no change
    assert ctl.update(100.0, 0).value == ctl.value
    # The controller is a value: target and horizon are kept, fields are plain numbers.
    assert dataclasses.asdict(ctl) == {"value": ctl.value, "target": 6.0, "horizon": 10000}
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctl.value = 1.0  # type: ignore[misc]


def test_adaptive_controller_refuses_non_positive_coefficient() -> None:
    ctl = AdaptiveKLController(value=0.1, target=6.0, horizon=100)
    # KL 0: factor 1 - 0.2 * 600 / 100 = -0.2 -> refused
    with pytest.raises(ValueError, match="n_steps=600 is too large for horizon=100"):
        ctl.update(0.0, 600)
    with pytest.raises(ValueError, match="current_kl must be a finite number"):
        ctl.update(NAN, 1)
    with pytest.raises(ValueError, match="n_steps must be a non-negative int"):
        ctl.update(1.0, -1)
    with pytest.raises(ValueError, match="target must be a positive finite number"):
        AdaptiveKLController(value=0.1, target=0.0, horizon=100)
    with pytest.raises(ValueError, match="value must be a positive finite number"):
        AdaptiveKLController(value=0.0, target=1.0, horizon=100)


def test_fixed_controller_and_factory() -> None:
    ctl = make_kl_controller("fixed", 0.05)
    assert ctl == FixedKLController(0.05)
    assert ctl.update(123.0, 1000).value == 0.05
    adaptive = make_kl_controller("adaptive", 0.1, target=6.0, horizon=10000)
    assert adaptive == AdaptiveKLController(0.1, 6.0, 10000)
    with pytest.raises(ValueError, match="needs target and horizon"):
        make_kl_controller("adaptive", 0.1)
    with pytest.raises(KeyError, match="controller 'pid'; valid choices: adaptive, fixed"):
        make_kl_controller("pid", 0.1)
    with pytest.raises(ValueError, match="value must be a non-negative finite number"):
        FixedKLController(-0.1)


def _arrays(
    shape: tuple[int, int], lo: float | None = None, hi: float | None = None
) -> st.SearchStrategy[np.ndarray]:
    elements = st.floats(lo, hi, allow_nan=False, allow_infinity=False, width=32)
    return hnp.arrays(np.float32, shape, elements=elements)


@settings(max_examples=50, deadline=None)
@given(data=st.data(), b=st.integers(1, 4), r=st.integers(1, 6))
def test_k3_non_negative_for_any_inputs(data: st.DataObject, b: int, r: int) -> None:
    # Any finite float32 (the difference may overflow to +-inf; Delta's clamp handles it).
    logprobs = torch.from_numpy(data.draw(_arrays((b, r))))
    ref = torch.from_numpy(data.draw(_arrays((b, r))))
    out = kl_estimate("k3", logprobs, ref, torch.ones(b, r))
    assert (out >= 0).all() and (out <= 10).all()


@settings(max_examples=50, deadline=None)
@given(data=st.data(), b=st.integers(1, 4), r=st.integers(1, 6))
def test_estimators_are_zero_when_policy_equals_reference(
    data: st.DataObject, b: int, r: int
) -> None:
    logprobs = torch.from_numpy(data.draw(_arrays((b, r), -1e4, 0.0)))
    for name in KL_ESTIMATORS:
        out = kl_estimate(name, logprobs, logprobs.clone(), torch.ones(b, r))
        assert (out == 0).all(), name


@settings(max_examples=50, deadline=None)
@given(data=st.data(), b=st.integers(1, 4), r=st.integers(1, 6))
def test_padding_never_changes_results(data: st.DataObject, b: int, r: int) -> None:
    logprobs = torch.from_numpy(data.draw(_arrays((b, r), -20.0, 0.0)))
    ref = torch.from_numpy(data.draw(_arrays((b, r), -20.0, 0.0)))
    mask = torch.from_numpy(data.draw(hnp.arrays(np.bool_, (b, r))))
    mask[0, 0] = True
    junk = st.sampled_from([NAN, INF, -INF, 1e30, -5.0])
    fill_a = torch.full((b, r), data.draw(junk))
    fill_b = torch.full((b, r), data.draw(junk))
    dirty_logprobs = torch.where(mask, logprobs, fill_a)
    dirty_ref = torch.where(mask, ref, fill_b)
    for name in KL_ESTIMATORS:
        clean = kl_estimate(name, logprobs, ref, mask)
        dirty = kl_estimate(name, dirty_logprobs, dirty_ref, mask)
        assert torch.equal(clean, dirty), name
        assert (clean[~mask] == 0).all()
        for agg in ("token-mean", "seq-mean-token-mean"):
            a = kl_loss(logprobs, ref, mask, name, 0.1, agg).loss
            d = kl_loss(dirty_logprobs, dirty_ref, mask, name, 0.1, agg).loss
            assert torch.equal(a, d) and math.isfinite(a.item())
