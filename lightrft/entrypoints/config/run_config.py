"""RunConfig: the whole run, nested by concern, and its translation to service parameters."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, model_validator

from lightrft.application import params as service_params
from lightrft.application.cycle_settings import CycleSettings
from lightrft.application.reward_failure_policy import RewardFailurePolicy
from lightrft.application.source_concurrency import SourceConcurrency
from lightrft.domain.advantage_params import AdvantageParams
from lightrft.domain.algorithm_registries import ADVANTAGE_ESTIMATORS, POLICY_LOSSES
from lightrft.domain.correction_modes import DEFAULT_CORRECTION_CAP
from lightrft.domain.optimizer_params import OptimizerParams
from lightrft.domain.sampling_params import SamplingParams
from lightrft.entrypoints.config.components import ComponentSection
from lightrft.entrypoints.config.model_modality import media_keys_problem, requested_modality
from lightrft.entrypoints.config.reward_recipes import recipe_book, recipe_sections
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
from lightrft.entrypoints.field_copy import params_from, params_over


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

    @model_validator(mode="wrap")
    @classmethod
    def _media_rows_need_a_media_model(cls, data: Any, handler: Any) -> RunConfig:
        """Rows given images or audio while ``model.modality: auto`` found a text model."""
        config: RunConfig = handler(data)
        if requested_modality(data) == "auto":
            datasets = {"data.train": config.data.train, "data.eval": config.data.eval}
            problem = media_keys_problem(config.model.modality, config.model.path, datasets)
            if problem is not None:
                raise ValueError(problem)
        return config

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
        self._check_step_rewards()
        self._check_accuracy_sources()
        self._check_alike_groups()
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
        if self.rollout.temperature_schedule is not None and a.logprob_temperature == "sampling":
            raise ValueError(
                "rollout.temperature_schedule changes the sampling temperature during the run; "
                "the loss's log-probs need a fixed temperature: set algorithm.logprob_temperature "
                "to a number (e.g. 1.0)"
            )
        self._check_rollback_placement()
        if self.model.lora.rank == 0 and self.model.lora.target_modules != "all-linear":
            raise ValueError("model.lora.target_modules is set but model.lora.rank is 0")
        for section in self.components():
            section.check_in_run(self)
        return self

    def _check_rollback_placement(self) -> None:
        """A separate rollout producer samples with its own settings and plans its own steps:
        a rollback can change neither (the cycle refuses it too, later)."""
        t = self.train
        if t.on_collapse != "rollback" or self.rollout.placement != "split":
            return
        changes = t.collapse_rollback.to_domain(loss_temperature_follows=False)
        if changes.colocated_only:
            raise ValueError(
                f"train.collapse_rollback.{changes.colocated_only[0]} needs "
                "rollout.placement=colocated: a "
                "separate rollout producer samples with its own settings and steps"
            )

    def _check_teachers(self) -> None:
        a = self.algorithm
        needs = ADVANTAGE_ESTIMATORS.get(a.advantage_estimator).needs_teachers
        has = bool(self.teacher.weighted())
        if needs and not has:
            raise ValueError(
                f"algorithm.advantage_estimator {a.advantage_estimator!r} distills from "
                "teachers: set teacher.path=DIR, teacher.url=URL (a served teacher) or "
                "teacher.models=[{path: DIR, weight: 1}]"
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

    def _check_step_rewards(self) -> None:
        name = self.algorithm.advantage_estimator
        if not ADVANTAGE_ESTIMATORS.get(name).needs_step_rewards:
            return
        sources = [*self.reward.typed_sources, *recipe_sections(self)]
        if not any(s.passes_step_rewards for s in sources):
            raise ValueError(
                f"algorithm.advantage_estimator {name!r} credits each reasoning step: "
                "reward.sources needs a source that passes step rewards on (type process_rm "
                "with aggregate: steps); without one it would train on the outcome alone"
            )

    def _check_accuracy_sources(self) -> None:
        names = self.eval.accuracy_sources
        if names is None:
            return
        labels = [s.label for s in [*self.reward.typed_sources, *recipe_sections(self)]]
        unknown = sorted(set(names) - set(labels))
        if unknown or not names:
            raise ValueError(
                f"eval.accuracy_sources must name reward sources, got {unknown or names}; "
                f"sources: {labels}"
            )

    def _check_alike_groups(self) -> None:
        a = self.algorithm
        for key in ("alike_group_max_entropy", "alike_group_max_reward"):
            if getattr(a, key) is not None and a.alike_group_advantage == 0:
                raise ValueError(
                    f"algorithm.{key} gates algorithm.alike_group_advantage, which is 0: "
                    "set it too, or drop the gate"
                )
        if (
            a.alike_group_advantage > 0
            and not ADVANTAGE_ESTIMATORS.get(a.advantage_estimator).alike_groups
        ):
            raise ValueError(
                f"algorithm.alike_group_advantage is set but algorithm.advantage_estimator "
                f"{a.advantage_estimator!r} does not read it (grpo, dr_grpo, rloo, opo and "
                "cpgd do)"
            )

    def components(self) -> list[ComponentSection]:
        """Every component section (engine, strategy, reward sources), for generic checks."""
        reward = [*self.reward.sources, *recipe_sections(self)]
        return [self.rollout.engine, self.backend.strategy, *reward]

    def _agg(self) -> str:
        return self.algorithm.agg or POLICY_LOSSES.get(self.algorithm.policy_loss).defaults.agg

    # -- translation to the services' frozen parameters ---------------------------------

    def sampling(self) -> SamplingParams:
        r = self.rollout
        return params_from(
            SamplingParams,
            r,
            defaults="stop_token_ids ignore_eos",
            n=r.n_samples_per_prompt,
            stop_strings=tuple(r.stop),
            seed=self.train.seed,
        )

    def optimizer_params(self, role: Literal["policy", "critic"] = "policy") -> OptimizerParams:
        """The optimizer of the ``role`` model: the same schedule for both, the critic's
        peak learning rate ``optim.critic_lr`` when set (else ``optim.lr``)."""
        steps = self._optimizer_steps()
        ratio = self.optim.warmup_ratio
        warmup = self.optim.warmup_steps if ratio is None else math.ceil(ratio * steps)
        critic_lr = self.optim.critic_lr if role == "critic" else None
        return params_from(
            OptimizerParams,
            self.optim,
            defaults="eps",
            resolved={"warmup_steps": warmup, "lr": critic_lr or self.optim.lr},
            total_steps=steps,
        )

    def _optimizer_steps(self) -> int:
        batch = self.rollout.prompts_per_step * self.rollout.n_samples_per_prompt
        mini = self.train.mini_batch_size or batch
        per_step = self.train.epochs * max(1, -(-batch // mini))
        return self.train.total_steps * per_step

    def to_domain(self, *, pad_token_id: int = 0) -> CycleSettings:
        """The frozen service parameters this configuration describes: each parameter is the
        config field of its name (:func:`params_from`) unless given here; the fields no
        parameter copies are listed in :mod:`lightrft.entrypoints.config.field_routes`."""
        r, t, e, rw = self.rollout, self.train, self.eval, self.reward
        sampling = self.sampling()
        return CycleSettings(
            rollout=params_from(
                service_params.RolloutParams,
                r,
                sampling=sampling,
                pad_token_id=pad_token_id,
                measure_mismatch=r.measures_mismatch(),
                resolved={"temperature_schedule": r.schedule()},
            ),
            algorithm=self._algorithm(sampling),
            shaping=params_from(
                service_params.RewardShapingParams,
                rw,
                resolved={
                    "constraints": tuple(c.to_domain() for c in rw.constraints),
                    "recipes": recipe_book(self),
                },
                weights={s.label: s.weight for s in rw.typed_sources},
                gates={
                    s.label: s.gate_threshold
                    for s in rw.typed_sources
                    if s.gate_threshold is not None
                },
                concurrency=SourceConcurrency(rw.max_concurrent_sources, rw.source_timeout_s),
            ),
            train=params_from(service_params.TrainParams, t),
            cycle=params_from(
                service_params.CycleParams,
                t,
                eval_every=e.every if self.data.eval is not None else None,
                eval_sampling=params_from(
                    SamplingParams,
                    e,
                    defaults="top_p top_k min_p first_token_temperature stop_token_ids ignore_eos",
                    n=e.n_samples,
                    max_new_tokens=r.max_new_tokens,
                    stop_strings=tuple(r.stop),
                    seed=t.seed,
                ),
                eval_max_prompts=e.max_prompts,
                eval_accuracy_sources=(
                    tuple(e.accuracy_sources) if e.accuracy_sources is not None else None
                ),
                checkpoint_every=self.checkpoint.every,
                log_samples_per_step=self.logging.log_samples_per_step,
                shuffle_prompts=self.data.train.shuffle,
            ),
            reward_failures=RewardFailurePolicy(
                enabled=rw.stop_on_failures,
                threshold=rw.failure_threshold,
                patience=rw.failure_patience,
            ),
            health=params_from(
                service_params.HealthParams,
                t,
                thresholds=t.health.thresholds(),
                resolved={
                    "on_collapse_signals": None
                    if t.on_collapse_signals is None
                    else tuple(t.on_collapse_signals)
                },
                rollback=t.collapse_rollback.to_domain(
                    loss_temperature_follows=self.algorithm.logprob_temperature == "sampling"
                ),
            ),
            off_policy=r.off_policy(),
        )

    def _algorithm(self, sampling: SamplingParams) -> service_params.AlgorithmParams:
        a = self.algorithm
        # quantized or stale rollouts: the mismatch correction is on by default
        corrected = self.rollout.quantized() or self.rollout.corrects_staleness()
        default_cap = DEFAULT_CORRECTION_CAP if corrected else None
        return params_from(
            service_params.AlgorithmParams,
            a,
            resolved={
                "logprob_temperature": (
                    sampling.logprob_temperature
                    if a.logprob_temperature == "sampling"
                    else a.logprob_temperature
                )
            },
            advantage=params_from(
                AdvantageParams,
                a,
                # kl_coef: the cycle sets the controller's value each step
                defaults="eps whiten_eps kl_coef",
                teacher_weights=tuple(w for _, w in self.teacher.weighted()) or (1.0,),
            ),
            loss=params_over(
                POLICY_LOSSES.get(a.policy_loss).defaults,
                a,
                tis_cap=a.tis_cap if a.tis_cap is not None else default_cap,
            ),
            max_response_length=self.rollout.max_new_tokens,
        )
