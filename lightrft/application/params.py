"""Frozen parameters of the services.

Entrypoints build these from the validated config (``RunConfig.to_domain()``, which copies
each field from the config field of its name); another platform can build them directly. No
pydantic here: plain dataclasses with checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Literal, get_args

from lightrft.application.source_concurrency import SourceConcurrency
from lightrft.domain.advantage_params import AdvantageParams
from lightrft.domain.algorithm_registries import (
    ADVANTAGE_ESTIMATORS,
    KL_CONTROLLERS,
    KL_ESTIMATORS,
    POLICY_LOSSES,
)
from lightrft.domain.cost_limit import CostLimit
from lightrft.domain.health_checks import HealthThresholds, collapse_signals
from lightrft.domain.policy_loss_params import PolicyLossParams
from lightrft.domain.reward_recipes import RecipeBook
from lightrft.domain.sampling_params import SamplingParams
from lightrft.domain.temperature_schedule import TemperatureSchedule

if TYPE_CHECKING:  # the implementations import torch; a config is validated without them
    from lightrft.domain.advantages import AdvantageEstimator
    from lightrft.domain.policy_losses import PolicyLoss


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value}")


def _non_negative(name: str, value: float) -> None:
    if not value >= 0:
        raise ValueError(f"{name} must be >= 0, got {value}")


@dataclass(frozen=True)
class RewardShapingParams:
    """How the per-source scores become one reward per sample (ALGORITHMS.md, step 1).

    ``weights`` maps reward-source names to weights (a missing source weighs 1.0).
    ``gates`` maps source names to thresholds: a sample whose score from such a source is
    below its threshold gets ``gate_value`` as its reward (before the overlong penalty).
    """

    weights: Mapping[str, float] = field(default_factory=dict)
    gates: Mapping[str, float] = field(default_factory=dict)
    gate_value: float = 0.0
    # a response cut off at max_new_tokens (finish_reason "length") gets this reward instead
    # of its score; None: scored as written
    truncated_reward: float | None = None
    overlong_buffer: int | None = None  # L_cache of DAPO's soft overlong punishment; None: off
    overlong_factor: float = 1.0
    normalize: bool = False  # running normalization (Welford, all ranks)
    normalize_subtract_mean: bool = True
    reward_clip: float | None = None
    advantage_clip: float | None = None
    concurrency: SourceConcurrency = field(default_factory=SourceConcurrency)  # scoring threads
    # cost limits on weight-0 sources (Safe RLHF): see application/constraint_step.py
    constraints: tuple[CostLimit, ...] = ()
    # reward recipes by prompt label (None: every sample scored by every source, ``weights``)
    recipes: RecipeBook | None = None

    def __post_init__(self) -> None:
        if self.overlong_buffer is not None:
            _positive("overlong_buffer", self.overlong_buffer)
        for name in ("reward_clip", "advantage_clip"):
            value = getattr(self, name)
            if value is not None:
                _positive(name, value)


@dataclass(frozen=True)
class RolloutParams:
    """Generation for one step: ``prompts_per_step`` prompts x ``sampling.n`` samples.

    ``prompts_per_step`` is per data-parallel rank. Dynamic sampling (DAPO) keeps only
    groups whose rewards differ and generates more rounds until ``prompts_per_step``
    informative groups are collected or ``max_sampling_rounds`` is reached.
    """

    prompts_per_step: int = 8
    sampling: SamplingParams = field(default_factory=lambda: SamplingParams(n=4))
    dynamic_sampling: bool = False
    max_sampling_rounds: int = 3
    pad_token_id: int = 0
    forward_micro_batch_size: int = 16  # rows per no-grad log-prob forward
    # The engine's log-probs come from another implementation (vLLM, SGLang): compute the
    # trainer's at the sampling temperature every step and log the rollout/* mismatch
    # metrics (domain.rollout_correction). Exact only without top-k/top-p/min-p filters
    # and FIRE (the engine reports the filtered distribution's log-probs).
    measure_mismatch: bool = False
    max_tokens_per_forward: int | None = None  # token budget of a no-grad forward instead
    balance_ranks: bool = False  # spread a step's prompts over ranks by cost (balanced_step)
    balance_encoder_weight: float = 1.0  # one media-encoder unit in tokens (domain.prompt_cost)
    # the step's sampling temperature instead of sampling.temperature (None: fixed)
    temperature_schedule: TemperatureSchedule | None = None

    def __post_init__(self) -> None:
        _positive("prompts_per_step", self.prompts_per_step)
        _positive("max_sampling_rounds", self.max_sampling_rounds)
        _positive("forward_micro_batch_size", self.forward_micro_batch_size)
        if self.max_tokens_per_forward is not None:
            _positive("max_tokens_per_forward", self.max_tokens_per_forward)
        if self.balance_encoder_weight < 0:
            raise ValueError(
                f"balance_encoder_weight must be >= 0, got {self.balance_encoder_weight}"
            )


@dataclass(frozen=True)
class AlgorithmParams:
    """The RL algorithm: estimator, policy loss, KL and entropy terms.

    ``kl_coef`` is the initial beta; with an estimator that puts KL in the reward
    (``reinforce_pp``, ``gae``) it shapes the reward, otherwise it weighs a KL loss term.
    ``kl_coef = 0`` skips the reference model entirely.
    """

    advantage_estimator: str = "grpo"
    advantage: AdvantageParams = field(default_factory=AdvantageParams)
    policy_loss: str = "ppo"
    loss: PolicyLossParams | None = None  # None: the policy loss's recommended defaults
    kl_estimator: str = "k3"
    kl_coef: float = 0.0
    kl_controller: str = "fixed"
    kl_target: float | None = None
    kl_horizon: float | None = None
    entropy_coef: float = 0.0
    high_entropy_fraction: float | None = None  # "Beyond the 80/20 rule"; None: all tokens
    value_clip: float | None = 0.2
    max_response_length: int | None = None  # L_max for seq-mean-token-sum-norm
    turn_credit: bool = False  # episodes: each turn's reward on its last token (docs/agents.md)
    # Temperature of every trainer-side log-prob of the sampled tokens (the policy in the loss,
    # the old policy, the reference, the teachers). The config sets it to the rollout's
    # sampling temperature, so the loss differentiates the distribution the tokens were drawn
    # from (docs/algorithms.md); 1.0 is the unscaled logits
    logprob_temperature: float = 1.0

    def __post_init__(self) -> None:
        estimator = ADVANTAGE_ESTIMATORS.get(self.advantage_estimator)
        if self.turn_credit and not estimator.turn_credit:
            raise ValueError(
                f"turn_credit needs an advantage estimator that reads token rewards; "
                f"{self.advantage_estimator!r} does not"
            )
        POLICY_LOSSES.get(self.policy_loss)
        KL_ESTIMATORS.get(self.kl_estimator)
        KL_CONTROLLERS.get(self.kl_controller)
        _non_negative("kl_coef", self.kl_coef)
        _non_negative("entropy_coef", self.entropy_coef)
        _positive("logprob_temperature", self.logprob_temperature)
        if self.high_entropy_fraction is not None and not 0 < self.high_entropy_fraction <= 1:
            raise ValueError(
                f"high_entropy_fraction must be in (0, 1], got {self.high_entropy_fraction}"
            )

    @cached_property
    def estimator(self) -> AdvantageEstimator:
        """The registered advantage estimator and its capability flags (looked up once)."""
        estimator: AdvantageEstimator = ADVANTAGE_ESTIMATORS.get(self.advantage_estimator)
        return estimator

    @cached_property
    def loss_definition(self) -> PolicyLoss:
        """The registered policy loss and its capability flags (looked up once)."""
        loss: PolicyLoss = POLICY_LOSSES.get(self.policy_loss)
        return loss

    @property
    def resolved_loss(self) -> PolicyLossParams:
        """``loss`` or, when unset, the policy loss's recommended parameters."""
        return self.loss if self.loss is not None else self.loss_definition.defaults


@dataclass(frozen=True)
class TrainParams:
    """PPO-style optimization over one experience batch.

    Each epoch shuffles the batch and splits it into mini-batches of ``mini_batch_size``
    samples (per rank; one optimizer step each); a mini-batch is processed in micro-batches
    of ``micro_batch_size`` samples, or, with ``max_tokens_per_micro_batch``, in
    micro-batches holding at most that many tokens (dynamic batch size).
    ``skip_zero_advantage_rows``: samples whose loss is exactly zero (all advantages zero and
    no term without the advantage) take no forward or backward; the gradient is unchanged.
    """

    epochs: int = 1
    mini_batch_size: int | None = None  # None: the whole batch is one optimizer step
    micro_batch_size: int = 4
    max_tokens_per_micro_batch: int | None = None
    shuffle: bool = True
    seed: int = 0
    skip_zero_advantage_rows: bool = False

    def __post_init__(self) -> None:
        _positive("epochs", self.epochs)
        _positive("micro_batch_size", self.micro_batch_size)
        if self.mini_batch_size is not None:
            _positive("mini_batch_size", self.mini_batch_size)
        if self.max_tokens_per_micro_batch is not None:
            _positive("max_tokens_per_micro_batch", self.max_tokens_per_micro_batch)


@dataclass(frozen=True)
class CycleParams:
    """The outer loop: steps, evaluation and checkpoint cadence."""

    total_steps: int = 100
    seed: int = 0
    eval_every: int | None = None  # steps; also evaluates before the first and after the last
    eval_sampling: SamplingParams = field(
        default_factory=lambda: SamplingParams(n=1, temperature=0.0)
    )
    eval_max_prompts: int | None = None
    # the reward sources whose weighted sum decides an evaluated sample's correctness
    # (None: the combined reward)
    eval_accuracy_sources: tuple[str, ...] | None = None
    checkpoint_every: int | None = None
    log_samples_per_step: int = 4
    shuffle_prompts: bool = True  # False: every epoch walks the prompt set in order

    def __post_init__(self) -> None:
        _positive("total_steps", self.total_steps)
        for name in ("eval_every", "checkpoint_every"):
            value = getattr(self, name)
            if value is not None:
                _positive(name, value)
        _non_negative("log_samples_per_step", self.log_samples_per_step)


@dataclass(frozen=True)
class RollbackChanges:
    """What a collapse rollback changes besides the weights and the learning rate
    (``train.collapse_rollback``; applied by :mod:`lightrft.application.rollback_changes`).

    After the k-th rollback the rollout temperature is the configured one plus
    ``k * temperature_delta``; from the first rollback on, the entropy bonus is
    ``entropy_coef`` and the policy loss's upper clip range is ``clip_eps_high``
    (DAPO's clip-higher) where they are set (None: unchanged). ``loss_temperature_follows``:
    the trainer's log-probs are taken at the sampling temperature
    (``algorithm.logprob_temperature=sampling``), so they follow a changed temperature.
    ``redo_steps``: the run takes again the steps whose updates a rollback undid (it ends that
    many steps later), so a run rolled back to its start still makes its planned number of
    updates and its learning-rate schedule still reaches its end.
    """

    temperature_delta: float = 0.0
    entropy_coef: float | None = None
    clip_eps_high: float | None = None
    loss_temperature_follows: bool = False
    redo_steps: bool = False

    def __post_init__(self) -> None:
        _non_negative("temperature_delta", self.temperature_delta)
        if self.entropy_coef is not None:
            _non_negative("entropy_coef", self.entropy_coef)
        if self.clip_eps_high is not None:
            _non_negative("clip_eps_high", self.clip_eps_high)

    @property
    def colocated_only(self) -> tuple[str, ...]:
        """The keys set here that a separate rollout producer cannot follow (it samples with
        its own settings and plans its own steps)."""
        return tuple(k for k in ("temperature_delta", "redo_steps") if getattr(self, k))

    @property
    def changes_anything(self) -> bool:
        """Whether a rollback changes any setting (besides weights and learning rate)."""
        return bool(self.temperature_delta) or (
            self.entropy_coef is not None or self.clip_eps_high is not None
        )


OnCollapse = Literal["warn", "rollback", "stop"]
RankBy = Literal["auto", "reward"]
"""What ranks the best state a rollback returns to: ``auto``, held-out accuracy when the run
evaluates, else the training reward; ``reward``, the training reward always (a run that
evaluates rarely would otherwise go back to its start)."""
ON_COLLAPSE_CHOICES: tuple[str, ...] = get_args(OnCollapse)


@dataclass(frozen=True)
class HealthParams:
    """The training-health monitor (docs/health.md) and what a collapse signal does.

    ``on_collapse``: ``warn`` only logs; ``rollback`` restores the best state so far (by
    held-out accuracy when the run evaluates, else by training reward) and multiplies the
    learning rate by ``rollback_lr_factor``, at most ``max_rollbacks`` times, and changes the
    sampling and loss settings ``rollback`` names; ``stop`` ends the run (with a checkpoint
    when the run has a store).
    """

    thresholds: HealthThresholds = field(default_factory=HealthThresholds)
    on_collapse: OnCollapse = "warn"
    rollback_lr_factor: float = 0.5
    max_rollbacks: int = 2
    rollback: RollbackChanges = field(default_factory=RollbackChanges)
    rollback_rank_by: RankBy = "auto"
    on_collapse_signals: tuple[str, ...] | None = None
    """The collapse signals ``on_collapse`` acts on (None: every one); the others only warn."""

    def __post_init__(self) -> None:
        named, known = self.on_collapse_signals, collapse_signals()
        if named is not None and (not named or any(name not in known for name in named)):
            raise ValueError(
                f"on_collapse_signals must name collapse signals ({', '.join(known)}), "
                f"got {list(named)}"
            )
        if self.on_collapse not in ON_COLLAPSE_CHOICES:
            raise ValueError(
                f"on_collapse must be one of {', '.join(ON_COLLAPSE_CHOICES)}, "
                f"got {self.on_collapse!r}"
            )
        if not 0 < self.rollback_lr_factor <= 1:
            raise ValueError(f"rollback_lr_factor must be in (0, 1], got {self.rollback_lr_factor}")
        _non_negative("max_rollbacks", self.max_rollbacks)
        if self.rollback_rank_by not in get_args(RankBy):
            raise ValueError(
                f"rollback_rank_by must be one of {', '.join(get_args(RankBy))}, "
                f"got {self.rollback_rank_by!r}"
            )


@dataclass(frozen=True)
class AgentParams:
    """Multi-turn episodes (``rollout.agent``; see docs/agents.md).

    An episode ends when the environment says done, after ``max_turns`` model turns, when
    the next turn or observation would pass ``max_response_tokens`` (generated plus
    observation tokens after the prompt), or at ``episode_timeout_s`` of wall-clock time.
    One environment call (reset or step) that takes longer than ``step_timeout_s`` ends its
    episode (counted as ``agent/env_timeouts``). After the first environment step of a turn
    finishes, the rollout waits at most ``straggler_wait_s`` for the others before it
    generates the next turn of the episodes that are ready, so one slow environment does
    not hold the rest. ``stop_strings`` end a model turn besides the end-of-turn token
    (the tool-call format's closing tag).

    What an environment answers is untrusted input (:mod:`lightrft.application.env_answers`):
    an observation longer than ``max_observation_tokens`` (or 32 characters a token before
    rendering) ends its episode ``observation_too_long``; token ids outside ``vocab_size``,
    a reward that is not finite or passes ``max_abs_reward`` in size, and more than
    ``max_counter_keys`` counter names end it ``env_invalid``. With
    ``stop_on_env_failures``, when at least ``env_failure_threshold`` of the episodes of
    ``env_failure_patience`` consecutive rollouts end ``env_error`` or ``env_invalid``,
    the rollout raises :class:`~lightrft.application.env_failures.EnvironmentFailingError`
    naming ``environment``.
    """

    max_turns: int = 4
    max_response_tokens: int | None = None
    episode_timeout_s: float = 300.0
    step_timeout_s: float = 30.0
    straggler_wait_s: float = 0.05
    stop_strings: tuple[str, ...] = ()
    max_observation_tokens: int = 4096
    max_abs_reward: float = 1e6
    max_counter_keys: int = 64
    stop_on_env_failures: bool = True
    env_failure_threshold: float = 0.9
    env_failure_patience: int = 3
    vocab_size: int | None = None  # the tokenizer's; None: ids are not checked
    environment: str = "the environment"  # names it in messages

    def __post_init__(self) -> None:
        _positive("max_turns", self.max_turns)
        if self.max_response_tokens is not None:
            _positive("max_response_tokens", self.max_response_tokens)
        _positive("episode_timeout_s", self.episode_timeout_s)
        _positive("step_timeout_s", self.step_timeout_s)
        _non_negative("straggler_wait_s", self.straggler_wait_s)
        _positive("max_observation_tokens", self.max_observation_tokens)
        _positive("max_abs_reward", self.max_abs_reward)
        _positive("max_counter_keys", self.max_counter_keys)
        _positive("env_failure_patience", self.env_failure_patience)
        if not 0.0 < self.env_failure_threshold <= 1.0:
            raise ValueError(
                f"env_failure_threshold must be in (0, 1], got {self.env_failure_threshold}"
            )
        if self.vocab_size is not None:
            _positive("vocab_size", self.vocab_size)
