from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lightrft.domain.aggregation import AGG_MODES, LossNormalizer
from lightrft.domain.policy_losses import (
    POLICY_LOSSES,
    PolicyLossInputs,
    PolicyLossOutput,
    PolicyLossParams,
    compute_policy_loss,
    truncated_is_weights,
)
from lightrft.domain.reduce import AllReduceSum
from lightrft.domain.registry import UnknownChoiceError
from tests.helpers.simulated_ranks import run_on_ranks

NAMES = ("ppo", "dapo", "gspo", "gspo_token", "gmpo", "cpgd", "reinforce")
F64 = torch.float64
GARBAGE = (float("nan"), float("inf"), -float("inf"), 1e30, -7.0)


def t(rows: list[list[float]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=F64)


def leaf(rows: list[list[float]]) -> torch.Tensor:
    return t(rows).requires_grad_(True)


def run(
    name: str,
    logprobs: torch.Tensor,
    old: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor | None = None,
    params: PolicyLossParams | None = None,
    rollout: torch.Tensor | None = None,
    normalizer: LossNormalizer | None = None,
) -> torch.Tensor:
    mask = torch.ones_like(old) if mask is None else mask
    inputs = PolicyLossInputs(logprobs, old, adv, mask, rollout)
    return compute_policy_loss(name, inputs, params, normalizer).loss


def grad_of(name: str, logprobs: torch.Tensor, *args: object, **kw: object) -> torch.Tensor:
    loss = run(name, logprobs, *args, **kw)  # type: ignore[arg-type]
    (grad,) = torch.autograd.grad(loss, logprobs)
    return grad


# ---------------------------------------------------------------- registry and defaults


def test_registry_names_are_exactly_the_config_choices() -> None:
    assert set(POLICY_LOSSES.names()) == set(NAMES)
    assert len(POLICY_LOSSES) == len(NAMES)


def test_defaults_follow_the_papers() -> None:
    dapo = POLICY_LOSSES.get("dapo").defaults
    assert (dapo.clip_eps_low, dapo.clip_eps_high, dapo.agg) == (0.2, 0.28, "token-mean")
    for name in ("gspo", "gspo_token"):
        d = POLICY_LOSSES.get(name).defaults
        assert (d.clip_eps_low, d.clip_eps_high, d.agg) == (3e-4, 4e-4, "seq-mean-token-mean")
    gmpo = POLICY_LOSSES.get("gmpo").defaults
    assert (gmpo.clip_eps_low, gmpo.clip_eps_high) == (0.4, 0.4)
    assert POLICY_LOSSES.get("cpgd").defaults.drift_coef == 0.001
    ppo = POLICY_LOSSES.get("ppo").defaults
    assert (ppo.clip_eps_low, ppo.clip_eps_high, ppo.agg) == (0.2, 0.2, "token-mean")
    assert (ppo.dual_clip, ppo.tis_cap) == (None, None)


# ---------------------------------------------------------------- hand-computed values


def test_ppo_hand_computed() -> None:
    logprobs = t([[math.log(1.5), math.log(0.5), math.log(1.1)]])
    old, adv = t([[0.0, 0.0, 0.0]]), t([[1.0, -1.0, 2.0]])
    out = compute_policy_loss("ppo", PolicyLossInputs(logprobs, old, adv, torch.ones(1, 3)))
    # t0: A=1, rho=1.5 -> -min(1.5, 1.2) = -1.2
    # t1: A=-1, rho=0.5 -> -min(-0.5, -0.8) = 0.8
    # t2: A=2, rho=1.1 (inside) -> -2.2;  token-mean = (-1.2 + 0.8 - 2.2) / 3 = -0.8667
    assert out.loss.item() == pytest.approx(-2.6 / 3)
    assert out.metrics["policy/clip_fraction"].item() == pytest.approx(2 / 3)
    # approx_kl = mean(rho - 1 - log rho) over (1.5, 0.5, 1.1)
    kl = sum(r - 1 - math.log(r) for r in (1.5, 0.5, 1.1)) / 3
    assert out.metrics["policy/approx_kl"].item() == pytest.approx(kl)
    assert out.metrics["policy/ratio_mean"].item() == pytest.approx(3.1 / 3)
    assert not out.metrics["policy/approx_kl"].requires_grad


def test_ppo_dual_clip_hand_computed() -> None:
    logprobs = t([[math.log(4.0), math.log(2.0)]])
    old, adv = t([[0.0, 0.0]]), t([[-1.0, -1.0]])
    params = PolicyLossParams(dual_clip=3.0)
    # t0: -min(-4, -1.2) = 4, dual clip min(4, -c A = 3) = 3
    # t1: -min(-2, -1.2) = 2 < 3, unchanged;  mean = (3 + 2) / 2 = 2.5
    assert run("ppo", logprobs, old, adv, params=params).item() == pytest.approx(2.5)
    # without dual clip: (4 + 2) / 2 = 3
    assert run("ppo", logprobs, old, adv).item() == pytest.approx(3.0)


def test_dapo_clip_higher_hand_computed() -> None:
    logprobs, old, adv = t([[math.log(1.25)]]), t([[0.0]]), t([[1.0]])
    # dapo: eps_high = 0.28 -> -min(1.25, 1.28) = -1.25; ppo: -min(1.25, 1.2) = -1.2
    assert run("dapo", logprobs, old, adv).item() == pytest.approx(-1.25)
    assert run("ppo", logprobs, old, adv).item() == pytest.approx(-1.2)


def test_gspo_hand_computed_with_padding() -> None:
    logprobs = t([[0.2, -0.1, float("nan")]])
    old, adv = t([[0.0, 0.0, 5.0]]), t([[1.0, 1.0, float("inf")]])
    mask = torch.tensor([[1, 1, 0]])
    # s = exp((0.2 - 0.1) / 2) = exp(0.05) = 1.051271; wide clip: l = -1.051271 per token
    wide = PolicyLossParams(0.2, 0.2, agg="seq-mean-token-mean")
    assert run("gspo", logprobs, old, adv, mask, wide).item() == pytest.approx(-math.exp(0.05))
    # defaults clip s to 1 + 4e-4: l = -1.0004
    assert run("gspo", logprobs, old, adv, mask).item() == pytest.approx(-1.0004)
    assert run("gspo_token", logprobs, old, adv, mask).item() == pytest.approx(-1.0004)


def test_gspo_token_gradient_differs_from_gspo_as_in_the_paper() -> None:
    old, adv = t([[0.0, 0.0]]), t([[1.0, 3.0]])
    wide = PolicyLossParams(0.5, 0.5, agg="seq-mean-token-mean")
    s = math.exp(0.05)
    # gspo: L = mean_u(-A_u s) -> dL/dlogp_t = -s * mean(A) / |y| = -s * 2 / 2 = -s
    g = grad_of("gspo", leaf([[0.2, -0.1]]), old, adv, None, wide)
    torch.testing.assert_close(g, t([[-s, -s]]))
    # gspo_token: dL/dlogp_t = -A_t s / |y| = (-s/2, -3s/2)
    g = grad_of("gspo_token", leaf([[0.2, -0.1]]), old, adv, None, wide)
    torch.testing.assert_close(g, t([[-s / 2, -3 * s / 2]]))


def test_gmpo_hand_computed() -> None:
    params = PolicyLossParams(0.4, 0.4, agg="seq-mean-token-mean")
    old = t([[0.0, 0.0, 0.0]])
    # A = 1: d' = min(d, clip(d)) = (0.4, -0.1, 0.3); ratio = exp(0.6 / 3); l = -exp(0.2)
    loss = run("gmpo", t([[0.5, -0.1, 0.3]]), old, t([[1.0, 1.0, 1.0]]), params=params)
    assert loss.item() == pytest.approx(-math.exp(0.2))
    # A = -1: d' = max(d, clip(d)) = (0.5, -0.4, 0.1); ratio = exp(0.2 / 3); l = +exp(0.0667)
    loss = run("gmpo", t([[0.5, -0.6, 0.1]]), old, t([[-1.0, -1.0, -1.0]]), params=params)
    assert loss.item() == pytest.approx(math.exp(0.2 / 3))


def test_cpgd_hand_computed() -> None:
    logprobs, old, adv = t([[0.1, 0.3, -0.3]]), t([[0.0, 0.0, 0.0]]), t([[1.0, 1.0, -1.0]])
    # log(1.2) = 0.182322, log(0.8) = -0.223144
    # t0: -1 * min(0.1, 0.1823) = -0.1; t1: -1 * 0.182322; t2: +1 * max(-0.3, -0.2231) = -0.223144
    pg = (-0.1 - math.log(1.2) + math.log(0.8)) / 3
    no_drift = PolicyLossParams(drift_coef=0.0)
    assert run("cpgd", logprobs, old, adv, params=no_drift).item() == pytest.approx(pg)
    # drift value k3 = rho - 1 - log rho per token, times coef 0.5, token-mean
    k3 = sum(math.exp(d) - 1 - d for d in (0.1, 0.3, -0.3))
    drift = PolicyLossParams(drift_coef=0.5)
    assert run("cpgd", logprobs, old, adv, params=drift).item() == pytest.approx(pg + 0.5 * k3 / 3)


def test_cpgd_drift_gradient_is_capped_k3_gradient() -> None:
    params = PolicyLossParams(drift_coef=0.5)
    # A = 0 leaves only the drift: dL/dlogp = coef * min(rho - 1, 2) / N
    # rho = e^0.1 -> 0.5 * 0.105171 / 2 ; rho = e^1.5 = 4.48 -> weight capped at 2 -> 0.5 * 2 / 2
    g = grad_of("cpgd", leaf([[0.1, 1.5]]), t([[0.0, 0.0]]), t([[0.0, 0.0]]), None, params)
    torch.testing.assert_close(g, t([[0.5 * (math.exp(0.1) - 1) / 2, 0.5]]))


def test_reinforce_hand_computed() -> None:
    logprobs = leaf([[-1.0, -2.0]])
    # l = -A logp = (2, 2); mean 2; dL/dlogp = -A / 2 = (-1, -0.5)
    loss = run("reinforce", logprobs, t([[5.0, 5.0]]), t([[2.0, 1.0]]))
    assert loss.item() == pytest.approx(2.0)
    loss.backward()
    torch.testing.assert_close(logprobs.grad, t([[-1.0, -0.5]]))


def test_truncated_is_weights_hand_computed() -> None:
    old = t([[0.0, 0.0, 0.0, float("nan")]])
    rollout = t([[-math.log(1.5), -math.log(3.0), math.log(4.0), 0.0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    # exp(old - rollout) = (1.5, 3 -> capped 2, 0.25); padding -> 0
    w = truncated_is_weights(old, rollout, mask, cap=2.0)
    torch.testing.assert_close(w, t([[1.5, 2.0, 0.25, 0.0]]))


def test_tis_multiplies_the_per_token_loss() -> None:
    logprobs, old, adv = t([[-1.0, -2.0]]), t([[0.0, 0.0]]), t([[1.0, 1.0]])
    rollout = t([[-math.log(1.5), math.log(2.0)]])
    params = PolicyLossParams(tis_cap=2.0)
    inputs = PolicyLossInputs(logprobs, old, adv, torch.ones(1, 2), rollout)
    out = compute_policy_loss("reinforce", inputs, params)
    # w = (1.5, 0.5); l = -A logp = (1, 2); (1.5 * 1 + 0.5 * 2) / 2 = 1.25
    assert out.loss.item() == pytest.approx(1.25)
    assert out.metrics["policy/tis_weight_mean"].item() == pytest.approx(1.0)


# ---------------------------------------------------------------- clipping stops the gradient


def test_ppo_gradient_stops_where_the_paper_clips() -> None:
    params = PolicyLossParams(dual_clip=3.0)
    rho = [1.5, 1.1, 0.5, 0.9, 4.0, 0.5]
    adv = t([[1.0, 1.0, -1.0, -1.0, -1.0, 1.0]])
    g = grad_of("ppo", leaf([[math.log(r) for r in rho]]), t([[0.0] * 6]), adv, None, params)
    # A>0 rho>1.2: 0; inside: -A rho / N; A<0 rho<0.8: 0; A<0 inside: -A rho / N;
    # A<0 rho>c=3 (dual clip): 0; A>0 rho<0.8 (not clipped on that side): -A rho / N
    expected = t([[0.0, -1.1 / 6, 0.0, 0.9 / 6, 0.0, -0.5 / 6]])
    torch.testing.assert_close(g, expected)


def test_gspo_sequence_clip_stops_the_whole_sequence() -> None:
    params = PolicyLossParams(0.2, 0.2, agg="seq-mean-token-mean")
    old = t([[0.0, 0.0], [0.0, 0.0]])
    adv = t([[1.0, 1.0], [1.0, 1.0]])
    # row 0: s = exp(0.3) > 1.2 with A > 0 -> clipped, no gradient on any token
    # row 1: s = exp(0.05) inside -> dL/dlogp_t = -A s / (|y| B) = -s / 4
    for name in ("gspo", "gspo_token"):
        g = grad_of(name, leaf([[0.3, 0.3], [0.1, 0.0]]), old, adv, None, params)
        s = math.exp(0.05)
        torch.testing.assert_close(g, t([[0.0, 0.0], [-s / 4, -s / 4]]))


def test_gmpo_log_space_clip_stops_single_tokens() -> None:
    params = PolicyLossParams(0.4, 0.4, agg="seq-mean-token-mean")
    old = t([[0.0, 0.0, 0.0]])
    # A = 1, d = (0.5, -0.5, 0.1): token 0 clipped at +0.4 (grad 0); token 1 below -0.4 is not
    # clipped for A > 0; ratio = exp((0.4 - 0.5 + 0.1) / 3) = 1; dL/dlogp_t = -A * ratio / 3
    g = grad_of("gmpo", leaf([[0.5, -0.5, 0.1]]), old, t([[1.0, 1.0, 1.0]]), None, params)
    torch.testing.assert_close(g, t([[0.0, -1 / 3, -1 / 3]]))
    # A = -1: token 1 below -0.4 clipped (grad 0); token 0 above +0.4 keeps its gradient
    # ratio = exp((0.5 - 0.4 + 0.1) / 3); dL/dlogp_t = +ratio / 3
    g = grad_of("gmpo", leaf([[0.5, -0.5, 0.1]]), old, t([[-1.0, -1.0, -1.0]]), None, params)
    r = math.exp(0.2 / 3)
    torch.testing.assert_close(g, t([[r / 3, 0.0, r / 3]]))


def test_cpgd_log_ratio_clip_stops_the_gradient() -> None:
    params = PolicyLossParams(drift_coef=0.0)
    adv = t([[1.0, 1.0, -1.0, -1.0]])
    # A>0 d=0.3 > log 1.2: 0; A>0 d=0.1: -A/N; A<0 d=-0.3 < log 0.8: 0; A<0 d=0.5: +1/N
    g = grad_of("cpgd", leaf([[0.3, 0.1, -0.3, 0.5]]), t([[0.0] * 4]), adv, None, params)
    torch.testing.assert_close(g, t([[0.0, -0.25, 0.0, 0.25]]))


# ---------------------------------------------------------------- properties


def random_batch(seed: int, b: int, r: int) -> tuple[torch.Tensor, ...]:
    """logprobs, old, rollout near each other; per-sequence advantages; every row has a token."""
    gen = torch.Generator().manual_seed(seed)
    old = -torch.rand(b, r, generator=gen, dtype=F64) * 3
    logprobs = old + 0.3 * torch.randn(b, r, generator=gen, dtype=F64)
    rollout = old + 0.3 * torch.randn(b, r, generator=gen, dtype=F64)
    adv = torch.randn(b, 1, generator=gen, dtype=F64).expand(b, r).clone()
    mask = torch.rand(b, r, generator=gen) < 0.7
    mask[torch.arange(b), torch.randint(0, r, (b,), generator=gen)] = True
    return logprobs, old, rollout, adv, mask


def wide(name: str, agg: str, **kw: object) -> PolicyLossParams:
    """The loss's defaults with a clip range wide enough that some tokens move."""
    return replace(
        POLICY_LOSSES.get(name).defaults, clip_eps_low=0.2, clip_eps_high=0.28, agg=agg, **kw
    )  # type: ignore[arg-type]


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    b=st.integers(1, 4),
    r=st.integers(1, 5),
    fill=st.sampled_from(GARBAGE),
    agg=st.sampled_from(AGG_MODES),
)
def test_padding_never_changes_loss_or_gradient(
    name: str, seed: int, b: int, r: int, fill: float, agg: str
) -> None:
    logprobs, old, rollout, adv, mask = random_batch(seed, b, r)
    dual = 3.0 if POLICY_LOSSES.get(name).supports_dual_clip else None
    params = wide(name, agg, tis_cap=2.0, dual_clip=dual)
    norm = LossNormalizer.from_mask(mask, max_response_length=r)

    def loss_and_grad(pad: float, extra: int) -> tuple[PolicyLossOutput, torch.Tensor]:
        def grow(x: torch.Tensor) -> torch.Tensor:  # ``extra`` columns and one row, zeros
            x = torch.cat([x, torch.zeros(b, extra, dtype=x.dtype)], dim=1)
            return torch.cat([x, torch.zeros(min(extra, 1), r + extra, dtype=x.dtype)], dim=0)

        m = grow(mask)

        def padded(x: torch.Tensor) -> torch.Tensor:
            return grow(x).masked_fill(~m, pad)

        lp = padded(logprobs).requires_grad_(True)
        inputs = PolicyLossInputs(lp, padded(old), padded(adv), m, padded(rollout))
        out = compute_policy_loss(name, inputs, params, norm)
        (grad,) = torch.autograd.grad(out.loss, lp)
        return out, grad[:b, :r]

    clean, clean_grad = loss_and_grad(0.0, 0)
    dirty, dirty_grad = loss_and_grad(fill, 2)
    torch.testing.assert_close(dirty.loss, clean.loss)
    torch.testing.assert_close(dirty_grad, clean_grad)
    assert torch.all(clean_grad[~mask] == 0)
    assert dirty.metrics.keys() == clean.metrics.keys()
    for key, value in clean.metrics.items():
        torch.testing.assert_close(dirty.metrics[key], value, msg=key)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**31), b=st.integers(2, 6), r=st.integers(1, 5), split=st.integers(1, 3)
)
def test_micro_batches_accumulate_to_the_full_batch_gradient(
    name: str, seed: int, b: int, r: int, split: int
) -> None:
    logprobs, old, rollout, adv, mask = random_batch(seed, b, r)
    norm = LossNormalizer.from_mask(mask, max_response_length=r)
    for agg in AGG_MODES:
        params = wide(name, agg, tis_cap=2.0)
        full = logprobs.clone().requires_grad_(True)
        full_loss = run(name, full, old, adv, mask, params, rollout, norm)
        full_loss.backward()
        micro = logprobs.clone().requires_grad_(True)
        total = torch.zeros((), dtype=F64)
        for rows in torch.arange(b).tensor_split(min(split, b)):
            loss = run(
                name, micro[rows], old[rows], adv[rows], mask[rows], params, rollout[rows], norm
            )
            loss.backward()
            total = total + loss.detach()
        torch.testing.assert_close(total, full_loss.detach())
        torch.testing.assert_close(micro.grad, full.grad)


def test_token_mean_across_simulated_ranks_equals_one_big_batch() -> None:
    logprobs, old, _, adv, mask = random_batch(7, 4, 5)
    shards = [slice(0, 1), slice(1, 4)]  # uneven token counts per rank

    def rank(part: slice) -> Callable[[AllReduceSum], torch.Tensor]:
        def fn(all_reduce_sum: AllReduceSum) -> torch.Tensor:
            norm = LossNormalizer.from_mask(mask[part], all_reduce_sum=all_reduce_sum)
            lp = logprobs[part].clone().requires_grad_(True)
            (grad,) = torch.autograd.grad(
                run("ppo", lp, old[part], adv[part], mask[part], None, None, norm), lp
            )
            return grad

        return fn

    grads = run_on_ranks([rank(p) for p in shards])
    full = logprobs.clone().requires_grad_(True)
    run("ppo", full, old, adv, mask).backward()
    torch.testing.assert_close(torch.cat(grads), full.grad)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31), b=st.integers(1, 4), r=st.integers(1, 5))
def test_at_ratio_one_the_gradient_is_minus_advantage_times_agg_weight(
    name: str, seed: int, b: int, r: int
) -> None:
    _, old, _, adv, mask = random_batch(seed, b, r)
    lengths = mask.sum(dim=-1, keepdim=True).to(F64)  # [B, 1]
    params = POLICY_LOSSES.get(name).defaults
    weight = 1 / mask.sum() if params.agg == "token-mean" else 1 / (b * lengths)
    g = grad_of(name, old.clone().requires_grad_(True), old, adv, mask, params)
    torch.testing.assert_close(g, torch.where(mask, -adv * weight, torch.zeros_like(adv)))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), cap=st.floats(0.5, 5.0))
def test_tis_weights_are_capped_ratios_and_zero_on_padding(seed: int, cap: float) -> None:
    _, old, rollout, _, mask = random_batch(seed, 3, 4)
    w = truncated_is_weights(old, rollout.requires_grad_(True), mask, cap)
    expected = torch.exp(old - rollout.detach()).clamp(max=cap)
    torch.testing.assert_close(w, torch.where(mask, expected, torch.zeros_like(w)))
    assert not w.requires_grad


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_ppo_with_an_unreachable_clip_is_the_plain_surrogate(seed: int) -> None:
    logprobs, old, _, adv, mask = random_batch(seed, 3, 4)
    params = PolicyLossParams(clip_eps_low=0.999, clip_eps_high=1e6)
    loss = run("ppo", logprobs, old, adv, mask, params)
    surrogate = (-adv * torch.exp(logprobs - old))[mask].mean()  # mean over masked tokens
    torch.testing.assert_close(loss, surrogate)


# ---------------------------------------------------------------- bad inputs


def test_unknown_name_lists_the_choices() -> None:
    with pytest.raises(UnknownChoiceError, match="valid choices: cpgd, dapo, gmpo"):
        run("grpo", t([[0.0]]), t([[0.0]]), t([[1.0]]))


def test_bad_inputs_raise_errors_that_name_the_argument() -> None:
    ok = t([[0.0, 0.0]])
    with pytest.raises(ValueError, match=r"advantages has shape \(1, 3\) but logprobs"):
        run("ppo", ok, ok, t([[1.0, 1.0, 1.0]]))
    with pytest.raises(ValueError, match=r"logprobs must have shape \(\*, \*\), got \(2,\)"):
        run("ppo", torch.zeros(2), torch.zeros(2), torch.zeros(2), torch.ones(2))
    with pytest.raises(ValueError, match="response_mask selects no token"):
        run("ppo", ok, ok, ok, torch.zeros(1, 2))
    with pytest.raises(ValueError, match="advantages contains a non-finite value"):
        run("ppo", ok, ok, t([[1.0, float("nan")]]))
    with pytest.raises(ValueError, match="old_logprobs contains a non-finite value"):
        run("cpgd", ok, t([[0.0, -float("inf")]]), ok)
    with pytest.raises(ValueError, match="tis_cap is set but inputs.rollout_logprobs is None"):
        run("ppo", ok, ok, ok, params=PolicyLossParams(tis_cap=2.0))
    with pytest.raises(ValueError, match=r"rollout_logprobs has shape \(1, 1\)"):
        run("ppo", ok, ok, ok, rollout=t([[0.0]]))
    with pytest.raises(ValueError, match="dual_clip is not used by policy loss 'cpgd'; only by"):
        run("cpgd", ok, ok, ok, params=PolicyLossParams(dual_clip=3.0))
    assert {n for n in NAMES if POLICY_LOSSES.get(n).supports_dual_clip} == {
        "ppo",
        "dapo",
        "gspo",
        "gspo_token",
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"clip_eps_low": 1.0}, "clip_eps_low must be below 1"),
        ({"clip_eps_high": -0.1}, "clip_eps_high must be a non-negative"),
        ({"dual_clip": 1.0}, "dual_clip must be a finite number above 1"),
        ({"agg": "mean"}, "unknown agg 'mean'; valid choices: token-mean"),
        ({"tis_cap": 0.0}, "tis_cap must be a positive"),
        ({"drift_coef": float("nan")}, "drift_coef must be a non-negative"),
    ],
)
def test_bad_params_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PolicyLossParams(**kwargs)  # type: ignore[arg-type]


def test_truncated_is_weights_refuses_bad_cap_and_shapes() -> None:
    ok = t([[0.0]])
    with pytest.raises(ValueError, match="cap must be a positive"):
        truncated_is_weights(ok, ok, torch.ones(1, 1), cap=0.0)
    with pytest.raises(ValueError, match=r"rollout_logprobs has shape \(1, 2\)"):
        truncated_is_weights(ok, t([[0.0, 0.0]]), torch.ones(1, 1), cap=2.0)
