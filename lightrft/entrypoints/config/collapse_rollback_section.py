"""The ``train.collapse_rollback`` section: what a ``train.on_collapse=rollback`` changes
besides the weights and the learning rate (``train.rollback_lr_factor``; docs/health.md)."""

from __future__ import annotations

from pydantic import Field

from lightrft.application.params import RollbackChanges
from lightrft.entrypoints.config.base import Section


class CollapseRollbackConfig(Section):
    temperature_delta: float = Field(
        0.0,
        ge=0,
        description="Added to rollout.temperature at each rollback (the k-th rollback "
        "samples at temperature + k * delta; 0: unchanged). With "
        "algorithm.logprob_temperature=sampling the loss's log-probs follow it.",
    )
    entropy_coef: float | None = Field(
        None,
        ge=0,
        description="The entropy bonus (algorithm.entropy_coef) from the first rollback on; "
        "null: unchanged.",
    )
    clip_eps_high: float | None = Field(
        None,
        ge=0,
        description="The policy loss's upper clip range (algorithm.clip_eps_high, DAPO's "
        "clip-higher) from the first rollback on; null: unchanged. It acts only where the "
        "loss's ratio can leave 1: several mini-batches or epochs per step.",
    )
    redo_steps: bool = Field(
        False,
        description="Take again the steps whose updates a rollback undid: the run ends that "
        "many steps later, so one rolled back to its start still makes train.total_steps "
        "updates (colocated placement only).",
    )

    def to_domain(self, *, loss_temperature_follows: bool) -> RollbackChanges:
        """The service parameters; ``loss_temperature_follows``: the loss's log-probs are at
        the sampling temperature (``algorithm.logprob_temperature=sampling``)."""
        return RollbackChanges(
            temperature_delta=self.temperature_delta,
            entropy_coef=self.entropy_coef,
            clip_eps_high=self.clip_eps_high,
            redo_steps=self.redo_steps,
            # only a changed temperature has anything to follow
            loss_temperature_follows=loss_temperature_follows and self.temperature_delta > 0,
        )
