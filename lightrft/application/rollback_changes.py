"""The sampling and loss settings after collapse rollbacks (``train.collapse_rollback``).

A rollback (``train.on_collapse=rollback``, :mod:`collapse_rollback`) restores the best state
and lowers the learning rate; the early entropy collapse (entropy gone while the reward is
low, most groups scoring alike) tends to come back from the restored state under the same
settings, so a rollback can also change what the run samples and trains with
(:class:`~lightrft.application.params.RollbackChanges`): a hotter rollout temperature, an
entropy bonus, a higher upper clip range. The settings are a function of the configured ones
and the number of rollbacks done, so a resumed run (whose checkpoint holds the rollbacks)
gets them back by applying it again.
"""

from __future__ import annotations

from dataclasses import replace

from lightrft.application.params import AlgorithmParams, RollbackChanges, RolloutParams

READINGS_PREFIX = "health/rollback/"
"""Metric prefix of the changed settings' current values (logged every step)."""


def settings_after(
    changes: RollbackChanges, rollout: RolloutParams, algorithm: AlgorithmParams, rollbacks: int
) -> tuple[RolloutParams, AlgorithmParams]:
    """The rollout and algorithm parameters after ``rollbacks`` rollbacks of a run configured
    with ``rollout`` and ``algorithm`` (those themselves for 0 rollbacks)."""
    if rollbacks < 0:
        raise ValueError(f"rollbacks must be >= 0, got {rollbacks}")
    if rollbacks == 0 or not changes.changes_anything:
        return rollout, algorithm
    if changes.temperature_delta:
        temperature = rollout.sampling.temperature + rollbacks * changes.temperature_delta
        rollout = replace(rollout, sampling=replace(rollout.sampling, temperature=temperature))
        if changes.loss_temperature_follows:
            algorithm = replace(algorithm, logprob_temperature=temperature)
    if changes.entropy_coef is not None:
        algorithm = replace(algorithm, entropy_coef=changes.entropy_coef)
    if changes.clip_eps_high is not None:
        loss = replace(algorithm.resolved_loss, clip_eps_high=changes.clip_eps_high)
        algorithm = replace(algorithm, loss=loss)
    return rollout, algorithm


def readings(
    changes: RollbackChanges, rollout: RolloutParams, algorithm: AlgorithmParams
) -> dict[str, float]:
    """The current value of each setting ``changes`` names (logged as
    ``health/rollback/<name>``, :data:`READINGS_PREFIX`)."""
    values: dict[str, float] = {}
    if changes.temperature_delta:
        values["temperature"] = rollout.sampling.temperature
    if changes.entropy_coef is not None:
        values["entropy_coef"] = algorithm.entropy_coef
    if changes.clip_eps_high is not None:
        values["clip_eps_high"] = algorithm.resolved_loss.clip_eps_high
    return values


def refuse_on_split_placement(changes: RollbackChanges) -> None:
    """A separate rollout producer samples with its own settings and plans its own steps, so
    a rollback can change neither there."""
    if changes.colocated_only:
        raise ValueError(
            f"train.collapse_rollback.{changes.colocated_only[0]} needs the colocated placement: "
            "a separate rollout producer samples with its own settings and steps"
        )
