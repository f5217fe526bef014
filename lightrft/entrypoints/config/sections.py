"""The sections of a run configuration, one model per concern.

Every model is frozen and forbids unknown keys; a choice among registered algorithms
(advantage estimator, policy loss, KL estimator and controller) is a
:func:`~lightrft.entrypoints.config.registered_name.registered_name` whose choices are read
from the registry of :mod:`lightrft.domain`, so a plugin's registration is a valid choice;
each option is documented once, in its ``Field(description=...)``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from lightrft.application.off_policy_params import OffPolicyParams
from lightrft.domain.agg_modes import AggMode
from lightrft.domain.algorithm_registries import (
    ADVANTAGE_ESTIMATORS,
    KL_CONTROLLERS,
    KL_ESTIMATORS,
    POLICY_LOSSES,
)
from lightrft.domain.correction_modes import DEFAULT_CORRECTION_MODE, CorrectionMode
from lightrft.domain.health_checks import collapse_signals
from lightrft.domain.temperature_schedule import TemperatureSchedule
from lightrft.entrypoints.config import (
    agent_configs,
    engine_configs,
    process_reward_config,  # noqa: F401  (registers)
    reward_configs,
    reward_model_configs,  # noqa: F401  (registers)
    reward_recipes,
    strategy_configs,
)
from lightrft.entrypoints.config.base import Section
from lightrft.entrypoints.config.collapse_rollback_section import CollapseRollbackConfig
from lightrft.entrypoints.config.components import (
    ENGINE_CONFIGS,
    ENVIRONMENT_CONFIGS,
    REWARD_SOURCE_CONFIGS,
    STRATEGY_CONFIGS,
    RewardSourceSection,
    component_field,
)
from lightrft.entrypoints.config.constraint_section import ConstraintConfig
from lightrft.entrypoints.config.health_section import HealthConfig
from lightrft.entrypoints.config.model_modality import MODALITIES, choose_modality
from lightrft.entrypoints.config.off_policy_section import OffPolicyFields
from lightrft.entrypoints.config.registered_name import registered_name
from lightrft.entrypoints.config.switches import AutoOnOff, AutoOrBool

AdvantageName = registered_name(ADVANTAGE_ESTIMATORS)
PolicyLossName = registered_name(POLICY_LOSSES)
KLEstimatorName = registered_name(KL_ESTIMATORS)
KLControllerName = registered_name(KL_CONTROLLERS)


class LoraConfig(Section):
    rank: int = Field(0, ge=0, description="LoRA rank; 0 trains all weights.")
    alpha: float = Field(16.0, gt=0, description="LoRA scaling numerator (scale = alpha / rank).")
    dropout: float = Field(0.0, ge=0, lt=1, description="Dropout on the LoRA input.")
    target_modules: str | list[str] = Field(
        "all-linear", description="Module names to adapt, or 'all-linear' for every linear layer."
    )


class ModelConfig(Section):
    modality: Literal["auto", "text", "vision-language", "audio-language", "omni"] = Field(
        "auto",
        description="What the model reads besides text; selects the model loader "
        "(policy, reference, critic, tokenizer/processor). auto: the checkpoint's, from its "
        "config.json (resolved when the config is read; text for the embedded model and for a "
        "path that cannot be read); "
        "text: text only, whatever the checkpoint (the original's --text_only); "
        "vision-language: Qwen2-VL / Qwen2.5-VL; audio-language: Qwen2-Audio; omni: a "
        "saved Qwen2.5-Omni thinker (images and audio, both in one row if wanted).",
    )
    min_pixels: int = Field(
        28 * 28 * 4, gt=0, description="vision-language, omni: images are resized to at least this."
    )
    max_pixels: int = Field(
        28 * 28 * 1280,
        gt=0,
        description="vision-language, omni: images are resized to at most this.",
    )
    train_vision_tower: bool = Field(
        False,
        description="vision-language, omni: train (or LoRA-adapt) the vision tower too; off: it "
        "stays frozen and LoRA adapts the language model only.",
    )
    path: str | None = Field(
        None,
        description="Local HF model directory, hub-cache directory or .gguf file; "
        "null uses the embedded default SmolLM2-135M-Instruct.",
    )
    dtype: Literal["fp32", "bf16", "fp16"] = Field(
        "fp32",
        description="Compute dtype. bf16/fp16 train with fp32 master weights (single: fp32 "
        "copies in the optimizer, fsdp2: fp32 shards, deepspeed: its own); fp16 adds dynamic "
        "loss scaling and needs backend.strategy single.",
    )
    attn_implementation: Literal["auto", "sdpa", "eager", "flash_attention_2"] = Field(
        "sdpa",
        description="Attention kernel; flash_attention_2 needs flash-attn, a CUDA GPU and "
        "bf16/fp16; auto: flash_attention_2 where it can run, else sdpa (logged as "
        "model.attention).",
    )
    gradient_checkpointing: bool = Field(False, description="Recompute activations in backward.")
    trust_remote_code: bool = Field(False, description="Run model code shipped with the weights.")
    packing: bool = Field(False, description="Pack variable-length samples into one row.")
    prefix_sharing: AutoOnOff = Field(
        "auto",
        description="Run each distinct prompt of a training/reference forward once, its "
        "responses packed after it under a 4-D mask (same results as padding). auto: with "
        "sdpa/eager attention when a prompt repeats and the packed row is <= 4096 tokens; "
        "on: always (not with flash_attention_2); off: never.",
    )
    logprob_chunk_size: int = Field(
        1024, gt=0, description="Rows per chunk of the log-prob kernel."
    )
    fused_lm_head: AutoOnOff = Field(
        "auto",
        description="Run the LM head fused with the log-prob kernel, chunk by chunk, so the "
        "response logits and their gradient never exist whole (Llama, Mistral, Qwen2, Qwen3, "
        "Gemma text models with an unsharded head; others use the unfused path). auto: when "
        "the unfused logits would take >= 256 MiB (long responses); on: always; off: never.",
    )
    lora: LoraConfig = Field(default_factory=LoraConfig)
    max_positions: int | None = Field(
        None,
        gt=0,
        description="Positions the model attends over (prompt + response). None: the "
        "max_position_embeddings of its config.json. The longest data.*.max_prompt_length "
        "plus rollout.max_new_tokens must fit, checked before the model loads; set it higher "
        "to run a model beyond its trained context on purpose (e.g. with RoPE scaling).",
    )

    @model_validator(mode="wrap")
    @classmethod
    def _modality_of_the_checkpoint(cls, data: Any, handler: Any) -> ModelConfig:
        """``auto`` resolved from ``path``'s checkpoint; a modality it contradicts refused."""
        if not isinstance(data, dict) or data.get("modality", "auto") not in MODALITIES:
            return handler(data)  # type: ignore[no-any-return]
        modality = choose_modality(data.get("modality", "auto"), data.get("path"))
        return handler({**data, "modality": modality})  # type: ignore[no-any-return]

    @model_validator(mode="after")
    def _pixel_bounds_are_ordered(self) -> ModelConfig:
        if self.min_pixels > self.max_pixels:
            raise ValueError(
                f"model.min_pixels ({self.min_pixels}) exceeds model.max_pixels ({self.max_pixels})"
            )
        return self

    @model_validator(mode="after")
    def _prefix_sharing_needs_a_dense_mask(self) -> ModelConfig:
        if self.prefix_sharing == "on" and self.attn_implementation == "flash_attention_2":
            raise ValueError(
                "prefix_sharing 'on' needs sdpa or eager attention (flash_attention_2 takes "
                "no 4-D mask); use prefix_sharing 'auto' or 'off'"
            )
        return self


class DatasetConfig(Section):
    path: str | None = Field(
        None,
        description="jsonl/json/parquet/arrow file, load_from_disk directory or directory of "
        "split files (see split); several as 'name:path,name:path' (see sampling_probs); "
        "null uses the built-in task.",
    )
    builtin: Literal[
        "arithmetic",
        "visual_colour",
        "visual_count",
        "visual_compare",
        "video_motion",
        "tones",
        "beeps",
        "sound_choice",
    ] = Field(
        "arithmetic",
        description="Built-in prompt set used when path is null: arithmetic word problems; "
        "visual_colour / visual_count / visual_compare: PIL-drawn shapes (name the colour / "
        "count them / which of two images has more; a vision-language model); video_motion: "
        "which way a dot moves across 4 frames (left / right; vision-language); tones: which "
        "of two tones is higher, beeps: how many beeps a clip holds, sound_choice: which of "
        "the options (hum, whistle, hiss) describes a clip, AVQA-style with <answer> tags (an "
        "audio-language model). Score sound_choice with reward type 'avqa_rule', the others "
        "but arithmetic with 'choice'.",
    )
    difficulty: int = Field(1, ge=1, le=3, description="Built-in arithmetic difficulty (1-3).")
    instruction: str | None = Field(
        None, description="Text appended to each question (None: the task's default)."
    )
    preprocessor: Literal["none", "gsm8k", "geo3k", "judge_pairs"] = Field(
        "none",
        description="gsm8k: 'question' -> prompt, answer after '####' -> reference; geo3k: "
        "'problem' (<image> marks the diagram) + a \\boxed{} instruction -> prompt, 'images' "
        "-> the diagrams, 'answer' -> reference (a vision-language model); judge_pairs: "
        "preference pairs (rows or a reward data set 'hpdv3:path', ...) as pairwise judge "
        "prompts, reference the preferred side's verdict A or B (score with judge_agreement).",
    )
    input_key: str = Field("prompt", description="Column holding the prompt text or messages.")
    images_key: str | None = Field(
        None, description="Column holding the row's images (path, bytes, base64, HF Image)."
    )
    audios_key: str | None = Field(
        None, description="Column holding the row's audio clips (array + rate, HF Audio, .wav)."
    )
    audio_sampling_rate: int | None = Field(
        None,
        gt=0,
        description="Sampling rate every audio clip must have (null: the audio model's "
        "feature-extractor rate); a clip at another rate is a bad row (never resampled).",
    )
    videos_key: str | None = Field(
        None,
        description="Column holding the row's videos (vision-language): a video file (mp4, "
        "webm ... read by PyAV, the 'video' extra), a folder of frames, or a list of frames.",
    )
    fps: float | None = Field(
        2.0,
        gt=0,
        description="Video frames sampled per second of a clip (null: every frame), at most "
        "max_frames spread over the clip; a frame list or folder is taken to be at this rate "
        "unless its row says {'frames': [...], 'fps': F}.",
    )
    max_videos: int | None = Field(
        None,
        ge=0,
        description="The most videos one row may hold (null: any); a row with more is a bad "
        "row (the original's --limit_mm_video_per_prompt).",
    )
    max_frames: int = Field(
        16,
        ge=1,
        description="The most frames taken of one video (each frame within the "
        "model's min_pixels .. max_pixels; two frames make one temporal patch).",
    )
    reference_key: str | None = Field("reference", description="Column holding the answer.")
    system_prompt: str | None = Field(None, description="System message prepended to each prompt.")
    system_prompt_file: str | None = Field(
        None,
        description="A YAML file of system prompts by task type (the original LightRFT's "
        "--system_prompt_path: text-to-image: ..., image-to-video: ...) for judge prompts "
        "(preprocessor judge_pairs): each row takes its data set's task type's prompt, "
        "'{prompt}' replaced by the generation prompt, in the original's judge layout.",
    )
    apply_chat_template: bool = Field(True, description="Render prompts with the chat template.")
    max_prompt_length: int = Field(
        512, gt=0, description="Prompt tokens kept (see truncate); longer prompts are counted."
    )
    truncate: Literal["left", "right", "skip", "error"] = Field(
        "left",
        description="A prompt longer than max_prompt_length: left cuts its beginning (the "
        "question and generation prompt at its end survive); right cuts its end (plain "
        "prompts: a chat would lose its generation prompt); skip drops the row; error makes "
        "it a bad row (see on_bad_row). Truncated prompts are counted (data/truncated_prompts).",
    )
    max_samples: int | None = Field(None, gt=0, description="Use at most this many rows.")
    on_bad_row: Literal["error", "skip"] = Field("error", description="What a malformed row does.")
    shuffle: bool = Field(
        True, description="Train set: a seeded new order each epoch (false: file order)."
    )
    num_builtin: int = Field(512, gt=0, description="How many built-in prompts to generate.")
    seed: int = Field(0, description="Seed of the built-in prompt generator.")
    builtin_split: Literal["train", "heldout", "all"] = Field(
        "train",
        description="arithmetic: which disjoint part of the problem space to draw from "
        "(data.eval defaults to heldout, so evaluation never sees a training problem).",
    )
    split: str | None = Field(
        None,
        description="When path is a directory (split files such as train.parquet / "
        "test.jsonl, or a save_to_disk DatasetDict): the split to read; null: train for "
        "data.train, test for data.eval.",
    )
    label_key: str | None = Field(
        None,
        description="Key naming each row's reward recipe (e.g. gsm8k_rule), looked up at the "
        "top level, then in extra_info; see reward.recipes. null: rows carry no label.",
    )
    sampling_probs: list[float] | None = Field(
        None,
        description="With several datasets in path ('name:path,name:path' or 'path,path'): "
        "the probability of drawing from each, one per dataset, mixed with the dataset's "
        "seed; null: their rows one dataset after another.",
    )

    @model_validator(mode="after")
    def _prompts_by_task_type_for_judge_prompts(self) -> DatasetConfig:
        if self.system_prompt_file is None:
            return self
        if self.preprocessor != "judge_pairs":
            raise ValueError(
                "system_prompt_file (prompts by task type) gives judge prompts their system "
                "prompt: set preprocessor=judge_pairs, or one prompt in system_prompt"
            )
        if not Path(self.system_prompt_file).is_file():
            raise ValueError(f"system_prompt_file {self.system_prompt_file} is not a file")
        return self

    @model_validator(mode="after")
    def _one_probability_per_dataset(self) -> DatasetConfig:
        probs = self.sampling_probs
        if probs is None:
            return self
        datasets = 1 if self.path is None else len(self.path.split(","))
        if len(probs) != datasets:
            raise ValueError(
                f"sampling_probs has {len(probs)} values but path names {datasets} "
                "dataset(s); give one probability per dataset"
            )
        if not all(0 <= p < float("inf") for p in probs) or sum(probs) <= 0:
            raise ValueError(f"sampling_probs must be finite, >= 0 and not all 0, got {probs}")
        return self


EVAL_DEFAULTS = {"num_builtin": 64, "seed": 10_000, "builtin_split": "heldout"}
"""What data.eval differs in from a training set when not set: also when only some of its
keys are overridden (``data.eval.difficulty=2`` keeps the held-out split and seed)."""


class DataConfig(Section):
    train: DatasetConfig = Field(default_factory=DatasetConfig)
    eval: DatasetConfig | None = Field(
        default_factory=lambda: DatasetConfig(**EVAL_DEFAULTS),  # type: ignore[arg-type]
        description="Held-out prompts; null disables evaluation.",
    )

    @model_validator(mode="before")
    @classmethod
    def _eval_defaults(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("eval"), dict):
            return {**data, "eval": {**EVAL_DEFAULTS, **data["eval"]}}
        return data


class AlgorithmConfig(Section):
    advantage_estimator: AdvantageName = Field("grpo", description="Advantage estimator name.")  # type: ignore[valid-type]
    policy_loss: PolicyLossName = Field("ppo", description="Policy loss name.")  # type: ignore[valid-type]
    clip_eps_low: float | None = Field(
        None, gt=0, description="Lower clip range (None: loss default)."
    )
    clip_eps_high: float | None = Field(
        None, gt=0, description="Upper clip range (None: loss default)."
    )
    dual_clip: float | None = Field(None, gt=1, description="Dual-clip c for negative advantages.")
    agg: AggMode | None = Field(None, description="Loss aggregation mode (None: loss default).")
    tis_cap: float | None = Field(
        None,
        gt=0,
        description="Rollout-mismatch correction cap C (None: no correction; see "
        "correction_mode and docs/engines.md).",
    )
    correction_mode: CorrectionMode = Field(
        DEFAULT_CORRECTION_MODE,
        description="Rollout-mismatch correction with tis_cap: token_truncate (TIS), "
        "token_mask, sequence_truncate or sequence_mask (MIS).",
    )
    drift_coef: float | None = Field(None, ge=0, description="CPGD policy-drift coefficient.")
    kl_estimator: KLEstimatorName = Field("k3", description="KL estimator.")  # type: ignore[valid-type]
    kl_coef: float = Field(
        0.0, ge=0, description="Initial KL coefficient beta; 0 skips the reference."
    )
    kl_controller: KLControllerName = Field(  # type: ignore[valid-type]
        "fixed", description="KL coefficient controller."
    )
    kl_target: float | None = Field(None, gt=0, description="Target KL of the adaptive controller.")
    kl_horizon: float | None = Field(None, gt=0, description="Horizon of the adaptive controller.")
    entropy_coef: float = Field(0.0, ge=0, description="Entropy bonus coefficient.")
    high_entropy_fraction: float | None = Field(
        None, gt=0, le=1, description="Train only on this top fraction of tokens by entropy."
    )
    logprob_temperature: Literal["sampling"] | Annotated[float, Field(gt=0)] = Field(
        "sampling",
        description="Temperature of the trainer's log-probs of the sampled tokens (the loss, "
        "the old policy, the reference, teachers): sampling = rollout.temperature (1 for "
        "greedy rollouts), the distribution the tokens were drawn from, as verl and TRL "
        "do; a number fixes it (1.0: the unscaled logits). A resume counts a recorded run "
        "config without this key as 1.0. See docs/algorithms.md.",
    )
    gamma: float = Field(1.0, ge=0, le=1, description="Discount for reinforce_pp and gae.")
    lam: float = Field(0.95, ge=0, le=1, description="GAE lambda.")
    turn_credit: bool = Field(
        False,
        description="Multi-turn episodes: each turn's environment reward on that turn's last "
        "generated token (turn-level credit, docs/agents.md); False: the episode's reward on "
        "its last token.",
    )
    value_clip: float | None = Field(0.2, gt=0, description="Critic value clip range.")
    opd_weight: float = Field(
        1.0,
        ge=0,
        le=1,
        description="opd: alpha in A_t = alpha * A_distill_t + (1 - alpha) * A_grpo; 1 "
        "distills only (the rewards are measured, not trained on).",
    )
    process_weight: float = Field(
        1.0,
        ge=0,
        description="process_grpo: w in A_t = w * (per-step return of the normalised step "
        "rewards) + (grpo advantage of the outcome reward); below 1 trusts a noisy PRM less "
        "than the verified outcome. See docs/algorithms.md.",
    )

    alike_group_advantage: float = Field(
        0.0,
        ge=0,
        description="Groups whose samples all scored alike (GRPO's zero-advantage groups): "
        "advantage c * (r - mean_batch r) / (std_batch r + eps) instead of 0, c this value, so "
        "an all-wrong group is pushed down and an all-right one up (grpo, dr_grpo, rloo, "
        "opo, cpgd); 0 keeps the estimator's own 0. See docs/algorithms.md.",
    )
    alike_group_max_entropy: float | None = Field(
        None,
        ge=0,
        description="With alike_group_advantage: only on steps whose rollout entropy "
        "estimate (mean -log p of the sampled tokens, nats; rollout/sampled_nll) is below "
        "this; null: every step.",
    )
    alike_group_max_reward: float | None = Field(
        None,
        ge=0,
        description="With alike_group_advantage: only on steps whose mean training reward is "
        "below this; null: every step.",
    )

    @model_validator(mode="after")
    def _adaptive_needs_target(self) -> AlgorithmConfig:
        if self.kl_controller == "adaptive" and (self.kl_target is None or self.kl_horizon is None):
            raise ValueError("kl_controller 'adaptive' needs kl_target and kl_horizon")
        if self.kl_controller == "adaptive" and self.kl_coef == 0:
            raise ValueError("kl_controller 'adaptive' needs kl_coef > 0")
        return self


class RolloutConfig(OffPolicyFields):
    engine: component_field(ENGINE_CONFIGS, "hf") = Field(  # type: ignore[valid-type]
        default_factory=engine_configs.HfEngineConfig,
        description="Generation engine: a section with its type (hf, ...) and that type's "
        "options, or just the type's name.",
    )
    prompts_per_step: int = Field(8, gt=0, description="Prompts per step per rank (rollout batch).")
    n_samples_per_prompt: int = Field(4, gt=0, description="Samples per prompt (group size G).")
    temperature: float = Field(1.0, ge=0, description="Sampling temperature (0: greedy).")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass.")
    top_k: int = Field(0, ge=0, description="Top-k filter (0: off).")
    min_p: float = Field(0.0, ge=0, lt=1, description="Min-p filter (0: off).")
    max_new_tokens: int = Field(256, gt=0, description="Generation budget L_max.")
    stop: list[str] = Field(default_factory=list, description="Stop strings.")
    first_token_temperature: float | None = Field(
        None, gt=0, description="FIRE first-token temperature."
    )
    temperature_schedule: (
        list[tuple[Annotated[int, Field(ge=1)], Annotated[float, Field(ge=0)]]] | None
    ) = Field(
        None,
        description="[[step, temperature], ...]: the training rollouts' temperature per step, "
        "linear between the points, the first point's before it and the last's after it "
        "(rollout.temperature must equal the last); None: rollout.temperature every step.",
    )
    dynamic_sampling: bool = Field(False, description="DAPO: refill until groups are informative.")
    max_sampling_rounds: int = Field(3, gt=0, description="Round limit of dynamic sampling.")
    balance_ranks: bool = Field(
        False,
        description="Spread each step's prompts over the data-parallel ranks by cost (prompt "
        "tokens with media expanded + balance_encoder_weight x media-encoder units) instead of "
        "contiguous slices; logs balance/imbalance_*.",
    )
    balance_encoder_weight: float = Field(
        1.0,
        ge=0,
        description="balance_ranks: the cost of one media-encoder unit (an image patch, an "
        "audio position) in language-model tokens; about encoder params / LM params.",
    )
    forward_micro_batch_size: int = Field(
        16, gt=0, description="Rows per no-grad log-prob forward."
    )
    max_tokens_per_forward: int | None = Field(
        None,
        gt=0,
        description="Token budget of a no-grad forward (old/reference log-probs, values); "
        "replaces forward_micro_batch_size when set.",
    )
    mismatch_metrics: bool | None = Field(
        None,
        description="Log rollout/* engine-vs-trainer log-prob metrics every step (one extra "
        "no-grad forward); None: on for every engine but hf, and for a quantized hf engine.",
    )
    fp8: bool = Field(
        False,
        description="FP8 rollout: the engine's weights quantized block-wise to e4m3 at each "
        "sync (vLLM on CUDA only; turns on algorithm.tis_cap=2 unless set).",
    )
    environment: component_field(ENVIRONMENT_CONFIGS) | None = Field(  # type: ignore[valid-type]
        None,
        description="Multi-turn episodes: the environment each sample talks to (a section "
        "with its type: tools, http, ...); None: one model turn per sample.",
    )
    max_turns: int = Field(
        1, gt=0, description="Model turns per episode at most (with rollout.environment)."
    )
    agent: agent_configs.AgentConfig = Field(
        default_factory=agent_configs.AgentConfig,
        description="Token and time limits of a multi-turn episode.",
    )

    @model_validator(mode="after")
    def _turns_need_an_environment(self) -> RolloutConfig:
        if self.max_turns > 1 and self.environment is None:
            raise ValueError(
                f"rollout.max_turns={self.max_turns} needs rollout.environment (e.g. "
                "rollout.environment=tools)"
            )
        return self

    @model_validator(mode="after")
    def _one_episode_driver(self) -> RolloutConfig:
        if self.agent.gateway is not None and self.environment is not None:
            raise ValueError(
                "rollout.agent.gateway and rollout.environment exclude each other: the "
                "gateway's agent program is the environment (drop one)"
            )
        return self

    @model_validator(mode="after")
    def _schedule_ends_at_the_temperature(self) -> RolloutConfig:
        schedule = self.schedule()
        if schedule is not None and schedule.final != self.temperature:
            raise ValueError(
                f"rollout.temperature_schedule ends at {schedule.final} but rollout.temperature "
                f"is {self.temperature}: set rollout.temperature={schedule.final} (the "
                "temperature after the schedule, which a run's identity and logs report)"
            )
        return self

    def schedule(self) -> TemperatureSchedule | None:
        """``temperature_schedule`` as the domain's schedule (None when unset)."""
        if self.temperature_schedule is None:
            return None
        try:
            return TemperatureSchedule.of(self.temperature_schedule)
        except ValueError as error:
            raise ValueError(f"rollout.temperature_schedule: {error}") from None

    @model_validator(mode="after")
    def _fp8_needs_vllm(self) -> RolloutConfig:
        if self.fp8 and self.engine.type != "vllm":
            raise ValueError(
                f"rollout.fp8=true needs rollout.engine=vllm (got {self.engine.type!r})"
            )
        return self

    def quantized(self) -> bool:
        """Whether the engine samples from quantized weights (``fp8``, or the hf engine's
        ``quantization``)."""
        return self.fp8 or getattr(self.engine, "quantization", "none") != "none"

    def off_policy(self) -> OffPolicyParams:
        """The service parameters of the off-policy keys; a quantized engine holds other
        tensors than the trainer sends, so its syncs are not checksummed."""
        params = super().off_policy()
        return replace(
            params, verify_weight_sync=params.verify_weight_sync and not self.quantized()
        )

    def measures_mismatch(self) -> bool:
        """Whether the rollout/* mismatch metrics are computed (see ``mismatch_metrics``)."""
        if self.mismatch_metrics is not None:
            return self.mismatch_metrics
        # another implementation than the trainer's, or other weights
        return self.engine.type != "hf" or self.quantized()


class RewardConfig(Section):
    sources: list[component_field(REWARD_SOURCE_CONFIGS)] = Field(  # type: ignore[valid-type]
        default_factory=lambda: [reward_configs.MathRewardConfig()],
        description="Reward sources, each a section with its type (math, format, length, "
        "python, ...) and that type's options; combined as a weighted sum.",
    )
    gate_value: float = Field(
        0.0, description="Reward of a sample that fails a gate (see a source's gate_threshold)."
    )
    constraints: list[ConstraintConfig] = Field(
        default_factory=list,
        description="Cost limits (Safe RLHF): each names a weight-0 source of reward.sources "
        "whose score is a cost, with its limit, multiplier_lr and init; the Lagrange "
        "multiplier trades reward against cost in the advantage (docs/algorithms.md).",
    )
    truncated_reward: float | None = Field(
        None,
        description="Training reward of a response cut off at rollout.max_new_tokens (no EOS) "
        "instead of its score (e.g. 0: an unfinished answer earns nothing, so restating the "
        "problem until the limit cannot be rewarded by a lucky last number); null: scored as "
        "written. Evaluation always scores as written.",
    )
    overlong_buffer: int | None = Field(None, gt=0, description="DAPO overlong buffer L_cache.")
    overlong_factor: float = Field(1.0, ge=0, description="DAPO overlong penalty factor.")
    normalize: bool = Field(False, description="Running reward normalization.")
    normalize_subtract_mean: bool = Field(
        True, description="With normalize: subtract the running mean (else only divide by std)."
    )
    reward_clip: float | None = Field(None, gt=0, description="Clip rewards to [-c, c].")
    advantage_clip: float | None = Field(None, gt=0, description="Clip advantages to [-c, c].")
    stop_on_failures: bool = Field(
        True, description="Stop (with a checkpoint) when a source keeps failing on samples."
    )
    failure_threshold: float = Field(
        0.9, gt=0, le=1, description="Failed fraction of a step's samples that counts as failing."
    )
    failure_patience: int = Field(
        3, ge=1, description="Consecutive failing steps of one source before the run stops."
    )
    max_concurrent_sources: int = Field(
        4,
        ge=1,
        description="Sources scored at once on threads (rules and remote services; colocated "
        "reward models always one at a time); 1: one after another.",
    )
    source_timeout_s: float = Field(
        600.0, gt=0, description="Deadline of one source's scoring when scored on a thread."
    )
    recipes: dict[str, list[component_field(REWARD_SOURCE_CONFIGS)]] = Field(  # type: ignore[valid-type]
        default_factory=dict,
        description="Reward recipes by row label (data.*.label_key): label -> its sources "
        "(same schema as reward.sources), combined as their weighted sum; a row is scored by "
        "its recipe's sources only. Built in: gsm8k_rule, geo3k_rule (0.9 accuracy of the "
        "last \\boxed{} + 0.1 format), avqa_rule (<answer> accuracy + format). Rows without "
        "a label use reward.sources.",
    )
    unknown_label: Literal["error", "default"] = Field(
        "error",
        description="A row whose label has no recipe: error stops naming it; default scores "
        "it with reward.sources.",
    )

    @property
    def typed_sources(self) -> list[RewardSourceSection]:
        """``sources`` with their common base type (name, weight, label)."""
        return [s for s in self.sources if isinstance(s, RewardSourceSection)]

    @model_validator(mode="after")
    def _unique_names(self) -> RewardConfig:
        names = [s.label for s in self.typed_sources]
        if len(set(names)) != len(names):
            raise ValueError(f"reward source names must be unique, got {names}")
        if not self.sources:
            raise ValueError("reward.sources is empty; need at least one reward source")
        self._check_constraints()
        return self

    def _check_constraints(self) -> None:
        weights = {s.label: s.weight for s in self.typed_sources}
        named = [c.source for c in self.constraints]
        if len(set(named)) != len(named):
            raise ValueError(f"reward.constraints name a source twice: {named}")
        for i, constraint in enumerate(self.constraints):
            where = f"reward.constraints[{i}]"
            if constraint.source not in weights:
                raise ValueError(
                    f"{where}.source {constraint.source!r} is not a reward source; "
                    f"reward.sources are named {sorted(weights)}"
                )
            if weights[constraint.source] != 0:
                raise ValueError(
                    f"{where}.source {constraint.source!r} has weight "
                    f"{weights[constraint.source]} in reward.sources; a cost source must have "
                    "weight 0 (the constraint, not the reward sum, uses its score)"
                )
            constraint.check_limit(where)

    @model_validator(mode="after")
    def _recipes_fit_sources(self) -> RewardConfig:
        reward_recipes.check_recipes(self.typed_sources, self.recipes)
        return self


class TrainConfig(Section):
    total_steps: int = Field(20, gt=0, description="RL steps (rollout + update) to run.")
    episodes: int | None = Field(
        None,
        gt=0,
        description="Passes over the training prompts (the original's --num_episodes); when "
        "set, total_steps becomes episodes x ceil(prompts / (rollout.prompts_per_step x "
        "ranks)) once the dataset is read.",
    )
    epochs: int = Field(1, gt=0, description="Passes over each experience batch.")
    mini_batch_size: int | None = Field(
        None, gt=0, description="Samples per optimizer step per rank."
    )
    micro_batch_size: int = Field(4, gt=0, description="Samples per forward/backward per rank.")
    max_tokens_per_micro_batch: int | None = Field(
        None,
        gt=0,
        description="Dynamic batch size: tokens per training micro-batch (balanced, as many "
        "on every rank); replaces micro_batch_size when set.",
    )
    shuffle: bool = Field(True, description="Shuffle each epoch's samples before mini-batches.")
    skip_zero_advantage_rows: bool = Field(
        True,
        description="Leave samples whose advantages are all zero out of the forward and "
        "backward when their loss is exactly zero (no KL or entropy term, no critic, a loss "
        "whose every term carries the advantage): the same gradient for less compute. When "
        "only that loss reads the old log-probs (off-policy modes, several mini-batches), "
        "they are computed for the trained samples only (docs/async.md).",
    )
    seed: int = Field(0, description="Seed of data order, sampling and shuffles.")
    health: HealthConfig = Field(
        default_factory=HealthConfig, description="Training-health check thresholds."
    )
    on_collapse: Literal["warn", "rollback", "stop"] = Field(
        "warn",
        description="At a collapse signal (reward_drop; early_entropy_collapse; truncation "
        "once it rose): warn; rollback to the best state so far (kept in host memory), lower "
        "the lr and change what train.collapse_rollback names; or stop.",
    )
    on_collapse_signals: list[str] | None = Field(
        None,
        description="The collapse signals on_collapse acts on (early_entropy_collapse, "
        "reward_drop, truncation); the others only warn. null: every one.",
    )
    rollback_lr_factor: float = Field(
        0.5, gt=0, le=1, description="Each rollback multiplies the learning rate by this."
    )
    max_rollbacks: int = Field(2, ge=0, description="Rollbacks at most; later collapses warn.")
    rollback_rank_by: Literal["auto", "reward"] = Field(
        "auto",
        description="What ranks the state a rollback returns to: auto = held-out accuracy when "
        "the run evaluates, else the training reward; reward = the training reward always "
        "(a run evaluating only at its start and end would go back to its start).",
    )
    collapse_rollback: CollapseRollbackConfig = Field(
        default_factory=CollapseRollbackConfig,
        description="Sampling and loss settings a rollback changes (temperature, entropy "
        "bonus, clip-higher), and whether the undone steps are taken again.",
    )

    @field_validator("on_collapse_signals")
    @classmethod
    def _known_collapse_signals(cls, names: list[str] | None) -> list[str] | None:
        known = collapse_signals()
        if names is not None and (not names or any(name not in known for name in names)):
            raise ValueError(f"expected one or more of {', '.join(known)}")
        return names


class OptimConfig(Section):
    lr: float = Field(1e-6, gt=0, description="Peak learning rate.")
    critic_lr: float | None = Field(
        None,
        gt=0,
        description="Peak learning rate of the critic's optimizer (PPO's value model; the "
        "original LightRFT's --critic_learning_rate). null: optim.lr.",
    )
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    betas: tuple[float, float] = Field((0.9, 0.999), description="AdamW betas.")
    max_grad_norm: float | None = Field(1.0, gt=0, description="Gradient clipping norm.")
    warmup_steps: int = Field(0, ge=0, description="Linear warmup steps.")
    warmup_ratio: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="Linear warmup as a fraction of the run's optimizer steps (rounded up), "
        "instead of warmup_steps (the original LightRFT's --lr_warmup_ratio). null: "
        "warmup_steps decides.",
    )
    schedule: Literal["constant", "cosine", "linear"] = Field(
        "constant", description="LR schedule."
    )
    min_lr_ratio: float = Field(0.0, ge=0, le=1, description="Final LR as a fraction of the peak.")

    @model_validator(mode="after")
    def _one_warmup(self) -> OptimConfig:
        if self.warmup_ratio is not None and self.warmup_steps:
            raise ValueError(
                f"optim.warmup_ratio ({self.warmup_ratio}) and optim.warmup_steps "
                f"({self.warmup_steps}) both set the warmup; set one of them"
            )
        return self


class BackendConfig(Section):
    strategy: component_field(STRATEGY_CONFIGS, "single") = Field(  # type: ignore[valid-type]
        default_factory=strategy_configs.SingleStrategyConfig,
        description="Training backend: a section with its type (single, fsdp2, deepspeed) "
        "and that type's options, or just the type's name.",
    )
    accelerator: Literal["auto", "cpu", "cuda", "npu"] = Field("auto", description="Device type.")
    host_allocator: Literal["default", "lean"] = Field(
        "default",
        description="Host memory allocator policy. lean: freed host memory goes back to the OS "
        "at once (glibc: fixed 128 KiB mmap and trim thresholds), so peak RSS follows the live "
        "tensors (about 0.5 GB less on the CPU main job) for some step time (page faults; "
        "docs/performance.md). default: glibc's own dynamic thresholds.",
    )
    collective_timeout_s: float = Field(
        600.0,
        gt=0,
        description="Seconds a collective (all-reduce, barrier ...) waits for the other "
        "ranks before failing: a stopped or hung rank ends the run after this long.",
    )
    nproc_per_node: int = Field(
        1, gt=0, description="Processes per node (wraps torchrun when > 1)."
    )
    sequence_parallel_size: int = Field(
        1,
        gt=0,
        description="Ulysses sequence parallelism: this many ranks split each training "
        "forward along the sequence (heads exchanged around attention); needs fsdp2 and a "
        "world size it divides. 1: off.",
    )

    @model_validator(mode="after")
    def _sequence_parallel_needs_fsdp2(self) -> BackendConfig:
        size = self.sequence_parallel_size
        if size == 1:
            return self
        strategy = getattr(self.strategy, "type", self.strategy)
        if strategy != "fsdp2":
            raise ValueError(
                f"backend.sequence_parallel_size={size} needs backend.strategy=fsdp2, "
                f"got {strategy!r}"
            )
        if self.nproc_per_node % size:
            raise ValueError(
                f"backend.sequence_parallel_size={size} must divide backend.nproc_per_node="
                f"{self.nproc_per_node}"
            )
        return self


class LoggingConfig(Section):
    run_dir: str = Field("runs/latest", description="Directory for metrics, checkpoints, reports.")
    overwrite: bool = Field(
        False, description="Move a previous run in run_dir aside (to run_dir.old-<time>) first."
    )
    trackers: list[Literal["jsonl", "tensorboard", "wandb"]] = Field(
        default_factory=lambda: ["jsonl"], description="Metric sinks (jsonl always recommended)."
    )
    json_logs: bool = Field(False, description="Log as JSON lines instead of the human console.")
    progress: bool = Field(True, description="Show a progress bar.")
    log_samples_per_step: int = Field(4, ge=0, description="Trajectories saved per step.")
    wandb_project: str = Field("lightrft", description="Weights & Biases project.")


class CheckpointConfig(Section):
    every: int | None = Field(
        None, gt=0, description="Save run state every k steps (and at the end)."
    )
    keep_last: int = Field(2, gt=0, description="Checkpoints kept.")
    resume: AutoOrBool = Field(
        False,
        description="Continue from the newest intact checkpoint in run_dir (an error if there "
        "is none); 'auto' starts fresh when run_dir holds no run.",
    )
    resume_changing: list[str] = Field(
        default_factory=list,
        description="Keys a resume may change on purpose (CLI: --resume-changing KEY ...); "
        "a resume whose model, weights, algorithm, optimizer, batch, rewards or training data "
        "differ in any other key is refused. Recorded in run_dir/history.jsonl.",
    )
    export_final: bool = Field(True, description="Write the final model in HF format.")


class EvalConfig(Section):
    every: int | None = Field(10, gt=0, description="Evaluate every k steps (and before/after).")
    max_prompts: int | None = Field(64, gt=0, description="Evaluation prompts used.")
    n_samples: int = Field(1, gt=0, description="Samples per evaluation prompt (pass@k).")
    temperature: float = Field(0.0, ge=0, description="Evaluation temperature (0: greedy).")
    accuracy_sources: list[str] | None = Field(
        None,
        description="Reward sources (by name) whose weighted sum decides whether an evaluated "
        "sample is correct (eval/accuracy, pass@k), e.g. [math] when a learned reward joins a "
        "verifiable one; null: the combined reward.",
    )
