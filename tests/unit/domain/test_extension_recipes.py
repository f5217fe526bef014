"""The estimator and loss recipes of docs/extending.md, followed by test-only entries.

Each registers a component exactly as the recipe says, uses it through the public entry
point (``compute_advantages`` / ``compute_policy_loss``), checks hand-computed values, and
unregisters it so later tests see the built-ins only.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from lightrft.domain.advantages import (
    ADVANTAGE_ESTIMATORS,
    AdvantageInputs,
    AdvantageOutput,
    AdvantageParams,
    compute_advantages,
    register_advantage_estimator,
)
from lightrft.domain.policy_losses import (
    POLICY_LOSSES,
    PolicyLossInputs,
    PolicyLossParams,
    compute_policy_loss,
    register_policy_loss,
)


def _batch_mean_baseline(inputs: AdvantageInputs, params: AdvantageParams, all_reduce_sum):  # type: ignore[no-untyped-def]
    """A_i = r_i - mean_j r_j (the whole batch as one baseline), broadcast over tokens."""
    total = all_reduce_sum(torch.stack([inputs.rewards.sum(), torch.tensor(len(inputs.rewards))]))
    centred = inputs.rewards - total[0] / total[1]
    adv = torch.where(inputs.response_mask.bool(), centred.unsqueeze(-1), 0.0)
    return AdvantageOutput(adv, adv, {})


def _plain_pg(inputs: PolicyLossInputs, params: PolicyLossParams):  # type: ignore[no-untyped-def]
    """l_t = -A_t * rho_t (no clip)."""
    ratio = (inputs.logprobs - inputs.old_logprobs).exp()
    return -inputs.advantages * ratio, {}


@pytest.fixture
def registered() -> Iterator[None]:
    register_advantage_estimator("batch_mean", uses_groups=False)(_batch_mean_baseline)
    register_policy_loss("plain_pg")(_plain_pg)
    yield
    ADVANTAGE_ESTIMATORS.remove("batch_mean")
    POLICY_LOSSES.remove("plain_pg")


def test_a_new_estimator_and_loss_work_through_the_public_entry_points(registered: None) -> None:
    mask = torch.tensor([[1, 1], [1, 0]])
    out = compute_advantages(
        "batch_mean", AdvantageInputs(torch.tensor([1.0, 0.0]), mask, torch.tensor([0, 1]))
    )
    # mean reward 0.5: advantages +0.5 (both tokens) and -0.5 (first token only)
    assert torch.equal(out.advantages, torch.tensor([[0.5, 0.5], [-0.5, 0.0]]))

    logprobs = torch.log(torch.tensor([[0.5, 0.25], [0.5, 1.0]]))
    loss = compute_policy_loss(
        "plain_pg",
        PolicyLossInputs(
            logprobs=logprobs,
            old_logprobs=logprobs,
            advantages=out.advantages,
            response_mask=mask,
        ),
    )
    # ratio 1 everywhere; token-mean over 3 tokens of -A: -(0.5 + 0.5 - 0.5) / 3
    assert float(loss.loss) == pytest.approx(-0.5 / 3)


def test_removing_an_entry_restores_the_registry(registered: None) -> None:
    assert "batch_mean" in ADVANTAGE_ESTIMATORS and "plain_pg" in POLICY_LOSSES


def test_the_builtins_are_back_after_the_fixture() -> None:
    assert "batch_mean" not in ADVANTAGE_ESTIMATORS and "plain_pg" not in POLICY_LOSSES
