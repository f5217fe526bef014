"""The ``train.health`` section: thresholds of the training-health checks (docs/health.md).

Defaults are those of :class:`~lightrft.domain.health_checks.HealthThresholds`, read from it
so the two never disagree.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from lightrft.domain.health_checks import HealthThresholds
from lightrft.entrypoints.config.base import Section

_T = HealthThresholds


class HealthConfig(Section):
    reward_window: int = Field(
        _T.reward_window, ge=1, description="Steps in the running mean of reward/mean."
    )
    reward_drop: float = Field(
        _T.reward_drop,
        gt=0,
        description="reward_drop fires when that running mean is more than this below its "
        "best so far (reward units).",
    )
    baseline_steps: int = Field(
        _T.baseline_steps,
        ge=1,
        description="First steps whose mean entropy is the entropy baseline; also the "
        "gradient norms needed before grad_norm_blowup is judged.",
    )
    entropy_ratio: float = Field(
        _T.entropy_ratio,
        gt=0,
        le=1,
        description="entropy_collapse fires below this fraction of the entropy baseline.",
    )
    entropy_floor: float = Field(
        _T.entropy_floor, ge=0, description="entropy_collapse also fires below this many nats."
    )
    truncated_fraction: float = Field(
        _T.truncated_fraction,
        gt=0,
        le=1,
        description="truncation fires when at least this fraction of responses hit "
        "rollout.max_new_tokens.",
    )
    kl: float = Field(
        _T.kl, gt=0, description="kl_blowup fires at a mean per-token KL of at least this (nats)."
    )
    grad_norm_ratio: float = Field(
        _T.grad_norm_ratio,
        ge=1,
        description="grad_norm_blowup fires at a gradient norm of at least this multiple of "
        "the recent median.",
    )
    grad_norm_window: int = Field(
        _T.grad_norm_window, ge=1, description="Recent non-zero gradient norms in that median."
    )
    zero_adv_groups: float = Field(
        _T.zero_adv_groups,
        gt=0,
        le=1,
        description="zero_advantage_groups fires when at least this fraction of groups have "
        "all-zero advantages.",
    )
    logprob_drift: float = Field(
        _T.logprob_drift,
        gt=0,
        description="logprob_drift fires at a rollout-vs-trainer k3 KL (rollout/kl_k3) of at "
        "least this.",
    )
    early_collapse_entropy: float = Field(
        _T.early_collapse_entropy,
        ge=0,
        description="early_entropy_collapse: a step matches when train/entropy is below this "
        "many nats (and the next two hold).",
    )
    early_collapse_reward: float = Field(
        _T.early_collapse_reward,
        description="... and the training reward/mean is below this (reward units) ...",
    )
    early_collapse_alike: float = Field(
        _T.early_collapse_alike,
        gt=0,
        le=1,
        description="... and at least this fraction of groups score alike (all-zero advantages).",
    )
    early_collapse_steps: int = Field(
        _T.early_collapse_steps,
        ge=1,
        description="early_entropy_collapse fires when this many of the last "
        "early_collapse_window steps match.",
    )
    early_collapse_window: int = Field(
        _T.early_collapse_window,
        ge=1,
        description="Recent steps early_collapse_steps counts in (at least early_collapse_steps).",
    )

    @model_validator(mode="after")
    def _window_holds_the_steps(self) -> HealthConfig:
        if self.early_collapse_window < self.early_collapse_steps:
            raise ValueError(
                f"train.health.early_collapse_window={self.early_collapse_window} must be at "
                f"least train.health.early_collapse_steps={self.early_collapse_steps}"
            )
        return self

    def thresholds(self) -> HealthThresholds:
        """The domain thresholds these settings describe."""
        return HealthThresholds(**self.model_dump())
