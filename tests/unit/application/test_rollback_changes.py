"""``settings_after``: the rollout and algorithm parameters after k collapse rollbacks."""

from __future__ import annotations

import pytest

from lightrft.application.params import AlgorithmParams, RollbackChanges, RolloutParams
from lightrft.application.rollback_changes import readings, settings_after
from lightrft.domain.types import SamplingParams

ROLLOUT = RolloutParams(sampling=SamplingParams(n=4, temperature=0.6))
ALGORITHM = AlgorithmParams(logprob_temperature=0.6)


def test_no_rollback_or_no_change_keeps_the_configured_settings() -> None:
    changes = RollbackChanges(temperature_delta=0.2, entropy_coef=0.01)
    assert settings_after(changes, ROLLOUT, ALGORITHM, 0) == (ROLLOUT, ALGORITHM)
    assert settings_after(RollbackChanges(), ROLLOUT, ALGORITHM, 2) == (ROLLOUT, ALGORITHM)


def test_the_temperature_rises_by_the_delta_per_rollback_and_the_loss_follows_if_tied() -> None:
    tied = RollbackChanges(temperature_delta=0.2, loss_temperature_follows=True)
    rollout, algorithm = settings_after(tied, ROLLOUT, ALGORITHM, 2)
    assert rollout.sampling.temperature == pytest.approx(1.0)  # 0.6 + 2 * 0.2
    assert algorithm.logprob_temperature == pytest.approx(1.0)
    assert rollout.sampling.n == 4 and rollout.prompts_per_step == ROLLOUT.prompts_per_step
    fixed = RollbackChanges(temperature_delta=0.2)
    assert settings_after(fixed, ROLLOUT, ALGORITHM, 1)[1].logprob_temperature == 0.6


def test_entropy_and_clip_are_set_from_the_first_rollback_on() -> None:
    changes = RollbackChanges(entropy_coef=0.01, clip_eps_high=0.28)
    for k in (1, 2):
        rollout, algorithm = settings_after(changes, ROLLOUT, ALGORITHM, k)
        assert rollout == ROLLOUT
        assert algorithm.entropy_coef == 0.01
        loss = algorithm.resolved_loss
        assert (loss.clip_eps_low, loss.clip_eps_high) == (0.2, 0.28)  # ppo's low clip kept
    assert readings(changes, rollout, algorithm) == {"entropy_coef": 0.01, "clip_eps_high": 0.28}


def test_bad_values_are_refused() -> None:
    with pytest.raises(ValueError, match="rollbacks must be >= 0"):
        settings_after(RollbackChanges(), ROLLOUT, ALGORITHM, -1)
    with pytest.raises(ValueError, match="temperature_delta must be >= 0"):
        RollbackChanges(temperature_delta=-0.1)
