"""Rollout/training mismatch metrics and correction weights on hand-computed cases."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lightrft.domain.policy_losses import (
    PolicyLossInputs,
    PolicyLossParams,
    compute_policy_loss,
    truncated_is_weights,
)
from lightrft.domain.rollout_correction import (
    CORRECTION_MODES,
    RolloutCorrection,
    correction_weights,
    mismatch_metrics,
)

LN2, LN3 = math.log(2.0), math.log(3.0)
# Two rows of three tokens; the last token of row 1 is padding (holding a NaN on purpose).
# d = trainer - rollout:  row 0: [ln2, -ln2, 0]   row 1: [ln3, 0, pad]
TRAINER = torch.tensor([[LN2 - 1.0, -LN2 - 2.0, -0.5], [LN3 - 1.5, -0.25, float("nan")]])
ROLLOUT = torch.tensor([[-1.0, -2.0, -0.5], [-1.5, -0.25, 0.0]])
MASK = torch.tensor([[1, 1, 1], [1, 1, 0]])


def test_mismatch_metrics_by_hand() -> None:
    m = mismatch_metrics(TRAINER, ROLLOUT, MASK)
    # |d| over the 5 tokens: ln2, ln2, 0, ln3, 0 -> mean (2 ln2 + ln3) / 5, max ln3
    assert float(m["rollout/logp_diff_mean"]) == pytest.approx((2 * LN2 + LN3) / 5, abs=1e-6)
    assert float(m["rollout/logp_diff_max"]) == pytest.approx(LN3, abs=1e-6)
    # k3 = rho - 1 - d: (2-1-ln2) + (0.5-1+ln2) + 0 + (3-1-ln3) + 0 = 2.5 - ln3
    assert float(m["rollout/kl_k3"]) == pytest.approx((2.5 - LN3) / 5, abs=1e-6)
    # rho: 2, 0.5, 1, 3, 1
    assert float(m["rollout/is_ratio_min"]) == pytest.approx(0.5, abs=1e-6)
    assert float(m["rollout/is_ratio_mean"]) == pytest.approx(7.5 / 5, abs=1e-6)
    assert float(m["rollout/is_ratio_max"]) == pytest.approx(3.0, abs=1e-6)


def test_identical_logprobs_have_no_mismatch() -> None:
    m = mismatch_metrics(ROLLOUT, ROLLOUT, MASK)
    assert float(m["rollout/logp_diff_max"]) == 0.0 and float(m["rollout/kl_k3"]) == 0.0
    assert float(m["rollout/is_ratio_min"]) == float(m["rollout/is_ratio_max"]) == 1.0


def test_empty_mask_is_refused() -> None:
    with pytest.raises(ValueError, match="response_mask"):
        mismatch_metrics(TRAINER, ROLLOUT, torch.zeros_like(MASK))


@pytest.mark.parametrize(
    ("mode", "cap", "expected"),
    [
        # token ratios: row 0 [2, 0.5, 1], row 1 [3, 1, pad]
        ("token_truncate", 2.5, [[2.0, 0.5, 1.0], [2.5, 1.0, 0.0]]),
        ("token_mask", 2.5, [[2.0, 0.5, 1.0], [0.0, 1.0, 0.0]]),
        # sequence ratios: row 0: 2 * 0.5 * 1 = 1; row 1: 3 * 1 = 3
        ("sequence_truncate", 2.5, [[1.0, 1.0, 1.0], [2.5, 2.5, 0.0]]),
        ("sequence_mask", 2.5, [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]),
        ("sequence_mask", 3.0, [[1.0, 1.0, 1.0], [3.0, 3.0, 0.0]]),  # rho = C is kept
    ],
)
def test_correction_weights_by_hand(mode: str, cap: float, expected: list[list[float]]) -> None:
    weights = correction_weights(TRAINER, ROLLOUT, MASK, RolloutCorrection(mode, cap))  # type: ignore[arg-type]
    torch.testing.assert_close(weights, torch.tensor(expected), atol=1e-5, rtol=0)
    assert not weights.requires_grad


def test_bad_mode_and_cap() -> None:
    with pytest.raises(ValueError, match="sequence_mask"):
        RolloutCorrection("icepop")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cap"):
        RolloutCorrection("token_mask", 0.0)
    with pytest.raises(ValueError, match="correction mode"):
        PolicyLossParams(correction_mode="nope")  # type: ignore[arg-type]


def test_truncated_is_weights_is_the_token_truncate_mode() -> None:
    expected = correction_weights(TRAINER, ROLLOUT, MASK, RolloutCorrection("token_truncate", 2.5))
    clean = torch.where(MASK.bool(), TRAINER, torch.zeros_like(TRAINER))
    torch.testing.assert_close(truncated_is_weights(clean, ROLLOUT, MASK, 2.5), expected)


def test_the_loss_applies_the_chosen_mode() -> None:
    # Per-token loss is -A * rho with rho = 1 (logprobs == old): -A. With A = 1 everywhere
    # and token-mean aggregation the loss is -mean(w) over the 5 tokens.
    # sequence_mask, C = 2.5: w = [1, 1, 1, 0, 0] -> loss -3/5, dropped fraction 2/5.
    clean = torch.where(MASK.bool(), TRAINER, torch.zeros_like(TRAINER))
    inputs = PolicyLossInputs(
        logprobs=clean.clone().requires_grad_(True),
        old_logprobs=clean,
        advantages=torch.ones_like(clean),
        response_mask=MASK,
        rollout_logprobs=ROLLOUT,
    )
    params = PolicyLossParams(tis_cap=2.5, correction_mode="sequence_mask")
    out = compute_policy_loss("ppo", inputs, params)
    assert float(out.loss) == pytest.approx(-3 / 5, abs=1e-6)
    assert float(out.metrics["policy/tis_dropped_fraction"]) == pytest.approx(2 / 5)
    # default mode token_truncate, C = 2.5: w = [2, 0.5, 1, 2.5, 1] -> loss -7/5
    default = compute_policy_loss("ppo", inputs, PolicyLossParams(tis_cap=2.5))
    assert float(default.loss) == pytest.approx(-7 / 5, abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(-3, 3), min_size=4, max_size=4),
    st.sampled_from(CORRECTION_MODES),
    st.floats(0.1, 5.0),
)
def test_weights_are_bounded_by_the_cap(diffs: list[float], mode: str, cap: float) -> None:
    trainer = torch.tensor([diffs[:2], diffs[2:]])
    weights = correction_weights(
        trainer,
        torch.zeros_like(trainer),
        torch.ones_like(trainer),
        RolloutCorrection(mode, cap),  # type: ignore[arg-type]
    )
    assert bool((weights >= 0).all()) and bool((weights <= cap + 1e-6).all())
