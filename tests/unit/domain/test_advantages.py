"""Hand-computed values, registry contents and input errors of the advantage estimators."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from torch import Tensor

from lightrft.domain.advantages import (
    ADVANTAGE_ESTIMATORS,
    AdvantageInputs,
    AdvantageParams,
    SingletonGroupWarning,
    compute_advantages,
)

NAN = float("nan")


def t(*rows: object) -> Tensor:
    return torch.tensor(rows, dtype=torch.float64)


def per_sample(advantages: Tensor, mask: Tensor) -> Tensor:
    """The one value each row holds on its masked tokens (outcome estimators)."""
    return advantages.sum(-1) / mask.sum(-1)


# Two groups with non-contiguous ids: group 7 = rewards [1, 3], group 3 = rewards [2, 6].
REWARDS = t(1.0, 2.0, 3.0, 6.0)
GROUPS = torch.tensor([7, 3, 7, 3])
MASK = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 1, 0]])


def run(name: str, **kwargs: object) -> Tensor:
    inputs = AdvantageInputs(rewards=REWARDS, response_mask=MASK, group_index=GROUPS)
    out = compute_advantages(name, inputs, AdvantageParams(**kwargs))  # type: ignore[arg-type]
    assert torch.equal(
        out.advantages[MASK == 0], torch.zeros(int((MASK == 0).sum()), dtype=out.advantages.dtype)
    )
    return per_sample(out.advantages, MASK)


@pytest.mark.parametrize("name", ["grpo", "group_norm", "cpgd"])
def test_grpo_hand_values(name: str) -> None:
    # group 7: mean 2, Bessel std sqrt(((1-2)^2 + (3-2)^2) / 1) = sqrt(2)
    # group 3: mean 4, Bessel std sqrt(((2-4)^2 + (6-4)^2) / 1) = sqrt(8)
    s2, s8 = math.sqrt(2) + 1e-6, math.sqrt(8) + 1e-6
    expected = t(-1 / s2, -2 / s8, 1 / s2, 2 / s8)
    torch.testing.assert_close(run(name), expected)


def test_grpo_three_samples() -> None:
    # rewards [1, 0, 1]: mean 2/3, squares 1/9 + 4/9 + 1/9 = 2/3, var (2/3) / 2 = 1/3
    inputs = AdvantageInputs(t(1.0, 0.0, 1.0), torch.ones(3, 2), torch.zeros(3, dtype=torch.long))
    out = compute_advantages("grpo", inputs)
    std = math.sqrt(1 / 3) + 1e-6
    torch.testing.assert_close(out.advantages[:, 0], t(1 / 3 / std, -2 / 3 / std, 1 / 3 / std))


def test_dr_grpo_hand_values() -> None:
    # r - group mean: 1-2, 2-4, 3-2, 6-4
    torch.testing.assert_close(run("dr_grpo"), t(-1.0, -2.0, 1.0, 2.0))


def test_rloo_hand_values() -> None:
    # leave-one-out: 1 - 3, 2 - 6, 3 - 1, 6 - 2 (= G/(G-1) (r - mean) with G = 2)
    torch.testing.assert_close(run("rloo"), t(-2.0, -4.0, 2.0, 4.0))


def test_rloo_group_of_three() -> None:
    # rewards [1, 0, 1]: 1 - (0+1)/2 = 0.5, 0 - (1+1)/2 = -1, 1 - (1+0)/2 = 0.5
    inputs = AdvantageInputs(t(1.0, 0.0, 1.0), torch.ones(3, 1), torch.zeros(3, dtype=torch.long))
    torch.testing.assert_close(
        compute_advantages("rloo", inputs).advantages[:, 0], t(0.5, -1.0, 0.5)
    )


def test_opo_length_weighted_baseline() -> None:
    # lengths [1, 3, 2], rewards [1, 0, 1]: b = (1*1 + 3*0 + 2*1) / (1+3+2) = 0.5
    # (the plain mean would be 2/3); advantages r - 0.5
    mask = torch.tensor([[1, 0, 0], [1, 1, 1], [1, 1, 0]])
    inputs = AdvantageInputs(t(1.0, 0.0, 1.0), mask, torch.zeros(3, dtype=torch.long))
    out = compute_advantages("opo", inputs)
    torch.testing.assert_close(per_sample(out.advantages, mask), t(0.5, -0.5, 0.5))


def test_remax_subtracts_greedy_reward() -> None:
    # [1 - 0.25, 0.5 - 0.5]
    inputs = AdvantageInputs(
        t(1.0, 0.5), torch.ones(2, 2), torch.tensor([0, 1]), baseline_rewards=t(0.25, 0.5)
    )
    out = compute_advantages("remax", inputs)
    torch.testing.assert_close(out.advantages, t([0.75, 0.75], [0.0, 0.0]))


def test_reinforce_pp_baseline_hand_values() -> None:
    # group 0: rewards [1, 0], lengths [1, 2] -> centered [0.5, -0.5]
    # group 1: rewards [3, 3] (no signal) -> 0, lengths [1, 1]
    # masked tokens: 0.5, -0.5, -0.5, 0, 0 -> mean -0.1, deviations .6 -.4 -.4 .1 .1,
    # squares .36 + .16 + .16 + .01 + .01 = .70, var .70 / 4 = .175
    # group 1 has no baseline and stays exactly 0 after whitening
    mask = torch.tensor([[1, 0], [1, 1], [1, 0], [0, 1]])
    inputs = AdvantageInputs(t(1.0, 0.0, 3.0, 3.0), mask, torch.tensor([0, 0, 1, 1]))
    out = compute_advantages("reinforce_pp_baseline", inputs)
    s = math.sqrt(0.175 + 1e-8)
    expected = t([0.6 / s, 0.0], [-0.4 / s, -0.4 / s], [0.0, 0.0], [0.0, 0.0])
    torch.testing.assert_close(out.advantages, expected)
    torch.testing.assert_close(out.returns, expected)


def test_reinforce_pp_hand_values() -> None:
    # beta 0.1, gamma 0.5, kl = 1 on every counted token (NaN on padding must not matter)
    # row 0 token rewards [-0.1, 1 - 0.1]: R = [-0.1 + 0.5 * 0.9, 0.9] = [0.35, 0.9]
    # row 1 token rewards [-0.1, -0.1, 1.9]: R = [0.325, 0.85, 1.9]
    # whiten over 5 tokens: mean 4.325 / 5 = 0.865; squared deviations
    # .265225 + .001225 + .2916 + .000225 + 1.071225 = 1.6295, var 1.6295 / 4 = 0.407375
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    kl = t([1.0, 1.0, NAN], [1.0, 1.0, 1.0])
    inputs = AdvantageInputs(t(1.0, 2.0), mask, torch.tensor([0, 1]), kl=kl)
    out = compute_advantages("reinforce_pp", inputs, AdvantageParams(gamma=0.5, kl_coef=0.1))
    returns = t([0.35, 0.9, 0.0], [0.325, 0.85, 1.9])
    torch.testing.assert_close(out.returns, returns)
    expected = (returns - 0.865) / math.sqrt(0.407375 + 1e-8) * mask
    torch.testing.assert_close(out.advantages, expected)


def test_gae_hand_values() -> None:
    # gamma 0.9, lambda 0.5, reward 1 on the last counted token, V after it = 0
    # delta_2 = 1 + 0 - 0.4 = 0.6; delta_1 = 0.9 * 0.4 - 0.2 = 0.16;
    # delta_0 = 0.9 * 0.2 - 0.5 = -0.32
    # A_2 = 0.6; A_1 = 0.16 + 0.45 * 0.6 = 0.43; A_0 = -0.32 + 0.45 * 0.43 = -0.1265
    # returns = A + V = [0.3735, 0.63, 1.0]; row 1 (one token, r = 0, V = 0.5): A = -0.5
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]])
    values = t([0.5, 0.2, 0.4, NAN], [0.5, NAN, NAN, NAN])
    inputs = AdvantageInputs(t(1.0, 0.0), mask, torch.tensor([0, 0]), values=values)
    out = compute_advantages("gae", inputs, AdvantageParams(gamma=0.9, lam=0.5))
    torch.testing.assert_close(out.returns, t([0.3735, 0.63, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]))
    raw = torch.tensor([-0.1265, 0.43, 0.6, -0.5], dtype=torch.float64)
    white = (raw - raw.mean()) / torch.sqrt(raw.var() + 1e-8)  # Bessel var over 4 tokens
    expected = t([white[0], white[1], white[2], 0.0], [white[3], 0.0, 0.0, 0.0])
    torch.testing.assert_close(out.advantages, expected)


def test_gae_skips_masked_out_positions_inside_a_row() -> None:
    # the same row with a masked-out column in the middle gives the same values
    contiguous = AdvantageInputs(
        t(1.0), torch.tensor([[1, 1, 1]]), torch.tensor([0]), values=t([0.5, 0.2, 0.4])
    )
    holed = AdvantageInputs(
        t(1.0), torch.tensor([[1, 0, 1, 1]]), torch.tensor([0]), values=t([0.5, NAN, 0.2, 0.4])
    )
    params = AdvantageParams(gamma=0.9, lam=0.5)
    a = compute_advantages("gae", contiguous, params).returns
    b = compute_advantages("gae", holed, params).returns
    torch.testing.assert_close(b, t([0.3735, 0.0, 0.63, 1.0]))
    torch.testing.assert_close(b[:, [0, 2, 3]], a)


def test_singleton_group_gets_zero_and_warns_once() -> None:
    # groups 1 and 2 hold one sample each: advantage 0; one warning per call
    inputs = AdvantageInputs(t(1.0, 0.0, 5.0, 7.0), torch.ones(4, 2), torch.tensor([0, 0, 1, 2]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = compute_advantages("grpo", inputs)
    assert [w.category for w in caught] == [SingletonGroupWarning]
    assert caught[0].filename == __file__  # points at the caller
    assert torch.equal(out.advantages[2:], torch.zeros(2, 2, dtype=torch.float64))
    assert out.metrics["groups/singleton"] == 2


def test_equal_rewards_give_exact_zero() -> None:
    # float32: (7 * 0.1) / 7 - 0.1 = -7.45e-9 and the Bessel std is 8.0e-9, so a plain
    # (r - mean) / (std + 1e-6) would give about -0.0074, not 0
    inputs = AdvantageInputs(
        torch.full((7,), 0.1), torch.ones(7, 2), torch.zeros(7, dtype=torch.long)
    )
    for name in ["grpo", "dr_grpo", "rloo", "opo", "cpgd", "reinforce_pp_baseline"]:
        out = compute_advantages(name, inputs)
        assert torch.equal(out.advantages, torch.zeros(7, 2)), name
        assert out.metrics["groups/zero_std"] == 1


def test_metrics_are_detached_scalars() -> None:
    values = torch.rand(4, 3, dtype=torch.float64, requires_grad=True)
    inputs = AdvantageInputs(REWARDS, MASK, GROUPS, values=values)
    out = compute_advantages("gae", inputs)
    assert not out.advantages.requires_grad and not out.returns.requires_grad
    assert {"advantages/mean", "advantages/std", "advantages/min", "advantages/max"} <= set(
        out.metrics
    )
    for value in out.metrics.values():
        assert value.shape == () and not value.requires_grad
    # dr_grpo per row [-1, -2, 1, 2] over row lengths [2, 1, 3, 2] = 8 counted tokens
    dr = compute_advantages("dr_grpo", AdvantageInputs(REWARDS, MASK, GROUPS))
    # (-1*2 + -2*1 + 1*3 + 2*2) / 8 = 3 / 8
    torch.testing.assert_close(
        dr.metrics["advantages/mean"], torch.tensor(3 / 8, dtype=torch.float64)
    )
    assert dr.metrics["advantages/min"] == -2 and dr.metrics["advantages/max"] == 2


def test_registry_names_and_flags() -> None:
    assert set(ADVANTAGE_ESTIMATORS.choices()) == {
        "grpo",
        "group_norm",
        "dr_grpo",
        "rloo",
        "reinforce_pp",
        "reinforce",
        "reinforce_pp_baseline",
        "reinforce_baseline",
        "gae",
        "cpgd",
        "remax",
        "opo",
        "opd",
        "process_grpo",  # lightrft/domain/process_rewards.py
    }
    assert "group_norm" not in ADVANTAGE_ESTIMATORS.names()
    assert ADVANTAGE_ESTIMATORS.get("group_norm").name == "grpo"
    # OpenRLHF's names of REINFORCE++ and its baseline variant
    assert ADVANTAGE_ESTIMATORS.get("reinforce").name == "reinforce_pp"
    assert ADVANTAGE_ESTIMATORS.get("reinforce_baseline").name == "reinforce_pp_baseline"
    gae = ADVANTAGE_ESTIMATORS.get("gae")
    assert gae.needs_values and gae.kl_in_reward and not gae.uses_groups
    assert ADVANTAGE_ESTIMATORS.get("reinforce_pp").kl_in_reward
    assert ADVANTAGE_ESTIMATORS.get("remax").needs_baseline_rewards
    needing = {n for n in ADVANTAGE_ESTIMATORS.names() if ADVANTAGE_ESTIMATORS.get(n).needs_values}
    assert needing == {"gae"}
    distilling = {
        n for n in ADVANTAGE_ESTIMATORS.names() if ADVANTAGE_ESTIMATORS.get(n).needs_teachers
    }
    assert distilling == {"opd"}


def _inputs(**overrides: object) -> AdvantageInputs:
    fields: dict[str, object] = {
        "rewards": REWARDS,
        "response_mask": MASK,
        "group_index": GROUPS,
    }
    fields.update(overrides)
    return AdvantageInputs(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "inputs", "params", "match"),
    [
        (
            "grpo",
            _inputs(rewards=t(1.0, 2.0, 3.0)),
            AdvantageParams(),
            r"response_mask must have shape \(3, \*\), got \(4, 3\)",
        ),
        (
            "grpo",
            _inputs(rewards=t([1.0], [2.0], [3.0], [4.0])),
            AdvantageParams(),
            r"rewards must have shape \(\*\)",
        ),
        (
            "grpo",
            _inputs(group_index=torch.tensor([0, 1])),
            AdvantageParams(),
            r"group_index must have shape \(4\)",
        ),
        (
            "grpo",
            _inputs(rewards=t(1.0, NAN, 0.0, 0.0)),
            AdvantageParams(),
            r"rewards contains a non-finite value \(nan\) at index \(1,\)",
        ),
        (
            "grpo",
            _inputs(response_mask=torch.zeros(4, 3)),
            AdvantageParams(),
            "response_mask selects no token",
        ),
        (
            "grpo",
            _inputs(response_mask=MASK * 2),
            AdvantageParams(),
            "response_mask must contain only 0 and 1",
        ),
        ("gae", _inputs(), AdvantageParams(), r"'gae' needs inputs.values"),
        (
            "gae",
            _inputs(values=torch.zeros(4, 2)),
            AdvantageParams(),
            r"values must have shape \(4, 3\), got \(4, 2\)",
        ),
        (
            "gae",
            _inputs(values=t([NAN, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0])),
            AdvantageParams(),
            r"values contains a non-finite value \(nan\) at index \(0, 0\)",
        ),
        ("remax", _inputs(), AdvantageParams(), r"'remax' needs inputs.baseline_rewards"),
        (
            "remax",
            _inputs(baseline_rewards=t(1.0)),
            AdvantageParams(),
            r"baseline_rewards must have shape \(4\)",
        ),
        (
            "reinforce_pp",
            _inputs(),
            AdvantageParams(kl_coef=0.1),
            r"'reinforce_pp' needs inputs.kl",
        ),
        (
            "no_such",
            _inputs(),
            AdvantageParams(),
            "unknown advantage estimator 'no_such'; valid choices: cpgd, dr_grpo, gae, "
            "group_norm, grpo, opd, opo, process_grpo, reinforce, reinforce_baseline, reinforce_pp, "
            "reinforce_pp_baseline, remax, rloo",
        ),
    ],
)
def test_bad_inputs_raise_clear_errors(
    name: str, inputs: AdvantageInputs, params: AdvantageParams, match: str
) -> None:
    with pytest.raises((ValueError, KeyError), match=match):
        compute_advantages(name, inputs, params)


def test_float_group_index_is_refused() -> None:
    with pytest.raises(
        TypeError, match="group_index must hold integer ids, got dtype torch.float32"
    ):
        compute_advantages("grpo", _inputs(group_index=torch.zeros(4)))


def test_nan_on_padding_is_accepted() -> None:
    # values NaN only where the mask is 0: valid
    values = torch.where(MASK.bool(), 0.5, NAN).to(torch.float64)
    out = compute_advantages("gae", _inputs(values=values))
    assert bool(torch.isfinite(out.advantages).all())


@pytest.mark.parametrize(
    ("field", "value"),
    [("gamma", 1.5), ("lam", -0.1), ("kl_coef", -1.0), ("whiten_eps", 0.0), ("eps", -1e-6)],
)
def test_bad_params_are_refused(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        AdvantageParams(**{field: value})
