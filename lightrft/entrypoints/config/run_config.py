"""RunConfig: the whole run, nested by concern, and its translation to service parameters."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic import Field, model_validator

from lightrft.application import params as service_params
from lightrft.application.cycle import CycleSettings
from lightrft.application.reward_failures import RewardFailurePolicy
from lightrft.application.source_scoring import SourceConcurrency
from lightrft.domain.advantages import ADVANTAGE_ESTIMATORS, AdvantageParams
from lightrft.domain.policy_losses import POLICY_LOSSES
from lightrft.domain.rollout_correction import DEFAULT_CORRECTION_CAP
from lightrft.domain.types import OptimizerParams, SamplingParams
from lightrft.entrypoints.config.components import ComponentSection
from lightrft.entrypoints.config.sections import (
    AlgorithmConfig,
    BackendConfig,
    CheckpointConfig,
    DataConfig,
    EvalConfig,
    LoggingConfig,
    ModelConfig,
    OptimConfig,
    RewardConfig,
    RolloutConfig,
    Section,
    TrainConfig,
)
from lightrft.entrypoints.config.teacher_section import TeacherConfig
from lightrft.entrypoints.field_copy import copy_fields


class RunConfig(Section):
    """Everything an RL run needs. Build it with :func:`lightrft.entrypoints.config.load_config`
    (``lightrft sft``'s config adds its own section: :class:`SftRunConfig`)."""

    plugins: list[str] = Field(
        default_factory=list,
        description="Modules imported before the config is validated; they register "
        "components (engines, reward sources, strategies) with their config models.",
    )
    model: ModelConfig = Field(default_factory=ModelConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    algorithm: AlgorithmConfig = Field(default_factory=AlgorithmConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    reward: RewardConfig = Field(default_factory=RewardConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    optim: OptimConfig = Field(default_factory=OptimConfig)
    backend: BackendConfig = Field(default_factory=BackendConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    teacher: TeacherConfig = Field(
        default_factory=TeacherConfig,
        description="Teacher models of on-policy distillation (algorithm.advantage_estimator opd).",
    )

    @model_validator(mode="after")
    def _cross_checks(self) -> RunConfig:
        a = self.algorithm
        estimator = ADVANTAGE_ESTIMATORS.get(a.advantage_estimator)
        if estimator.uses_groups and self.rollout.n_samples_per_prompt < 2:
            raise ValueError(
                f"algorithm.advantage_estimator {a.advantage_estimator!r} compares samples of a "
                "group: rollout.n_samples_per_prompt must be >= 2"
            )
        self._check_teachers()
        if POLICY_LOSSES.get(a.policy_loss).sequence_level and self._agg() == "token-mean":
            raise ValueError(
                f"algorithm.policy_loss {a.policy_loss!r} has one ratio per sequence and "
                "averages over sequences; algorithm.agg 'token-mean' would weight sequences by "
                "their length (use seq-mean-token-mean, the default)"
            )
        mini = self.train.mini_batch_size
        batch = self.rollout.prompts_per_step * self.rollout.n_samples_per_prompt
        if mini is not None and mini > batch and not self.rollout.dynamic_sampling:
            raise ValueError(
                f"train.mini_batch_size ({mini}) exceeds the samples per step "
                f"(rollout.prompts_per_step x n_samples_per_prompt = {batch})"
            )
        if mini is not None and batch % mini and not self.rollout.dynamic_sampling:
            raise ValueError(
                f"train.mini_batch_size ({mini}) does not divide the samples per step "
                f"(rollout.prompts_per_step x n_samples_per_prompt = {batch}): the last "
                f"optimizer step would see {batch % mini} sample(s); use a divisor of {batch}"
            )
        buffer = self.reward.overlong_buffer
        if buffer is not None and buffer > self.rollout.max_new_tokens:
            raise ValueError(
                f"reward.overlong_buffer ({buffer}) exceeds rollout.max_new_tokens "
                f"({self.rollout.max_new_tokens}): the penalized tail must fit in the response "
                "budget; lower reward.overlong_buffer or raise rollout.max_new_tokens"
            )
        if self.reward.constraints and (estimator.needs_values or estimator.needs_baseline_rewards):
            raise ValueError(
                f"reward.constraints need a critic-free estimator without a greedy baseline "
                f"(the cost advantage has no cost critic); algorithm.advantage_estimator is "
                f"{a.advantage_estimator!r}: use grpo, rloo, reinforce_pp, ..."
            )
        if self.model.lora.rank == 0 and self.model.lora.target_modules != "all-linear":
            raise ValueError("model.lora.target_modules is set but model.lora.rank is 0")
        for section in self.components():
            section.check_in_run(self)
        return self

    def _check_teachers(self) -> None:
        a = self.algorithm
        needs = ADVANTAGE_ESTIMATORS.get(a.advantage_estimator).needs_teachers
        has = bool(self.teacher.weighted())
        if needs and not has:
            raise ValueError(
                f"algorithm.advantage_estimator {a.advantage_estimator!r} distills from "
                "teachers: set teacher.path=DIR or teacher.models=[{path: DIR, weight: 1}]"
            )
        if has and not needs:
            raise ValueError(
                f"teacher is set but algorithm.advantage_estimator {a.advantage_estimator!r} "
                "uses no teacher (use opd)"
            )
        if needs and a.opd_weight < 1 and self.rollout.n_samples_per_prompt < 2:
            raise ValueError(
                "algorithm.opd_weight < 1 mixes in GRPO's group advantage: "
                "rollout.n_samples_per_prompt must be >= 2"
            )

    def components(self) -> list[ComponentSection]:
        """Every component section (engine, strategy, reward sources), for generic checks."""
        return [self.rollout.engine, self.backend.strategy, *self.reward.sources]

    def _agg(self) -> str:
        return self.algorithm.agg or POLICY_LOSSES.get(self.algorithm.policy_loss).defaults.agg

    # -- translation to the services' frozen parameters ---------------------------------

    def sampling(self) -> SamplingParams:
        r = self.rollout
        return copy_fields(
            SamplingParams,
            r,
            "temperature top_p top_k min_p max_new_tokens first_token_temperature",
            n=r.n_samples_per_prompt,
            stop_strings=tuple(r.stop),
            seed=self.train.seed,
        )

    def optimizer_params(self) -> OptimizerParams:
        o = self.optim
        return copy_fields(
            OptimizerParams,
            o,
            "lr weight_decay betas max_grad_norm warmup_steps schedule min_lr_ratio",
            total_steps=self._optimizer_steps(),
        )

    def _optimizer_steps(self) -> int:
        batch = self.rollout.prompts_per_step * self.rollout.n_samples_per_prompt
        mini = self.train.mini_batch_size or batch
        per_step = self.train.epochs * max(1, -(-batch // mini))
        return self.train.total_steps * per_step

    def to_domain(self, *, pad_token_id: int = 0) -> CycleSettings:
        """The frozen service parameters this configuration describes."""
        a = self.algorithm
        loss_defaults = POLICY_LOSSES.get(a.policy_loss).defaults
        sampling = self.sampling()
        overrides: dict[str, Any] = {
            key: value
            for key, value in {
                "clip_eps_low": a.clip_eps_low,
                "clip_eps_high": a.clip_eps_high,
                "dual_clip": a.dual_clip,
                "agg": a.agg,
                "tis_cap": a.tis_cap
                if a.tis_cap is not None
                or not (self.rollout.quantized() or self.rollout.corrects_staleness())
                else DEFAULT_CORRECTION_CAP,  # quantized or stale rollouts: correction on by default
                "drift_coef": a.drift_coef,
                "correction_mode": a.correction_mode,
            }.items()
            if value is not None
        }
        algorithm = service_params.AlgorithmParams(
            advantage_estimator=a.advantage_estimator,
            advantage=AdvantageParams(
                gamma=a.gamma,
                lam=a.lam,
                teacher_weights=tuple(w for _, w in self.teacher.weighted()) or (1.0,),
                opd_weight=a.opd_weight,
            ),
            turn_credit=a.turn_credit,
            policy_loss=a.policy_loss,
            loss=replace(loss_defaults, **overrides),
            kl_estimator=a.kl_estimator,
            kl_coef=a.kl_coef,
            kl_controller=a.kl_controller,
            kl_target=a.kl_target,
            kl_horizon=a.kl_horizon,
            entropy_coef=a.entropy_coef,
            high_entropy_fraction=a.high_entropy_fraction,
            logprob_temperature=(
                sampling.logprob_temperature
                if a.logprob_temperature == "sampling"
                else a.logprob_temperature
            ),
            value_clip=a.value_clip,
            max_response_length=self.rollout.max_new_tokens,
        )
        rw = self.reward
        shaping = service_params.RewardShapingParams(
            weights={s.label: s.weight for s in rw.typed_sources},
            gates={
                s.label: s.gate_threshold for s in rw.typed_sources if s.gate_threshold is not None
            },
            gate_value=rw.gate_value,
            truncated_reward=rw.truncated_reward,
            overlong_buffer=rw.overlong_buffer,
            overlong_factor=rw.overlong_factor,
            normalize=rw.normalize,
            normalize_subtract_mean=rw.normalize_subtract_mean,
            reward_clip=rw.reward_clip,
            advantage_clip=rw.advantage_clip,
            concurrency=SourceConcurrency(rw.max_concurrent_sources, rw.source_timeout_s),
            constraints=tuple(c.to_domain() for c in rw.constraints),
        )
        r, t, e = self.rollout, self.train, self.eval
        return CycleSettings(
            rollout=service_params.RolloutParams(
                prompts_per_step=r.prompts_per_step,
                sampling=sampling,
                dynamic_sampling=r.dynamic_sampling,
                max_sampling_rounds=r.max_sampling_rounds,
                pad_token_id=pad_token_id,
                forward_micro_batch_size=r.forward_micro_batch_size,
                measure_mismatch=r.measures_mismatch(),
                max_tokens_per_forward=r.max_tokens_per_forward,
                balance_ranks=r.balance_ranks,
            ),
            algorithm=algorithm,
            shaping=shaping,
            train=copy_fields(
                service_params.TrainParams,
                t,
                "epochs mini_batch_size micro_batch_size max_tokens_per_micro_batch shuffle seed "
                "skip_zero_advantage_rows",
            ),
            cycle=service_params.CycleParams(
                total_steps=t.total_steps,
                seed=t.seed,
                eval_every=e.every if self.data.eval is not None else None,
                eval_sampling=SamplingParams(
                    n=e.n_samples,
                    temperature=e.temperature,
                    max_new_tokens=r.max_new_tokens,
                    stop_strings=tuple(r.stop),
                    seed=t.seed,
                ),
                eval_max_prompts=e.max_prompts,
                checkpoint_every=self.checkpoint.every,
                log_samples_per_step=self.logging.log_samples_per_step,
                shuffle_prompts=self.data.train.shuffle,
            ),
            reward_failures=RewardFailurePolicy(
                enabled=rw.stop_on_failures,
                threshold=rw.failure_threshold,
                patience=rw.failure_patience,
            ),
            health=service_params.HealthParams(
                thresholds=t.health.thresholds(),
                on_collapse=t.on_collapse,
                rollback_lr_factor=t.rollback_lr_factor,
                max_rollbacks=t.max_rollbacks,
            ),
            off_policy=r.off_policy(),
        )
