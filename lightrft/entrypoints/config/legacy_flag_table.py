"""Every flag of the original LightRFT's RL trainers (``lightrft/utils/cli_args.py`` and the
``train_colocate.py`` of its examples, main and branches) and of OpenRLHF that this project
reads, with the original's meaning: the keys that give the same behaviour here, a no-op
where the flag changes nothing here, or a refusal naming what is missing.

docs/migrating.md's flag table is generated from this one (``python -m
lightrft.entrypoints.config.legacy_flag_docs``; a test compares them).
"""

from __future__ import annotations

from lightrft.entrypoints.config.legacy_flag_spec import (
    FLOAT,
    INT,
    PAIR,
    STR,
    SWITCH,
    WORDS,
    Flag,
    Kind,
    both,
    const,
    positive_or_none,
    sets,
    zero_is,
)

RM_TRAINER = (
    "a reward-model trainer's flag (train_srm_*.py / train_grm_vl.py): use `lightrft rm train`"
)

FLAGS: dict[str, Flag] = {
    # --- model --------------------------------------------------------------------------
    "pretrain": Flag(STR, **sets("model.path")),
    "bf16": Flag(SWITCH, **sets("model.dtype", value=const("bf16"))),
    "flash_attn": Flag(
        SWITCH,
        **sets("model.attn_implementation", value=const("auto")),
        note="FlashAttention-2 where it can run, else SDPA (logged as model.attention)",
    ),
    "gradient_checkpointing": Flag(SWITCH, **sets("model.gradient_checkpointing")),
    "packing_samples": Flag(SWITCH, **sets("model.packing")),
    "lora_rank": Flag(INT, **sets("model.lora.rank")),
    "lora_alpha": Flag(FLOAT, **sets("model.lora.alpha")),
    "lora_dropout": Flag(FLOAT, **sets("model.lora.dropout")),
    "target_modules": Flag(
        WORDS,
        **sets("model.lora.target_modules", value=lambda w: w[0] if len(w) == 1 else w),
    ),
    "max_pixels": Flag(
        INT, **sets("model.max_pixels"), note="bounds every image and every video frame"
    ),
    "fused_linear_logprob": Flag(SWITCH, **sets("model.fused_lm_head", value=const("on"))),
    "chunk_size": Flag(INT, **sets("model.logprob_chunk_size")),
    "text_only": Flag(
        SWITCH,
        **sets("model.modality", value=const("text")),
        note="without it the original trains a vision-language model; here the modality "
        "comes from the checkpoint's config.json",
    ),
    "freeze_prefix": Flag(
        SWITCH,
        **sets("model.train_vision_tower", value=lambda on: not on if isinstance(on, bool) else on),
        note="the original freezes the parameters named visual.* (the vision tower); here "
        "the vision tower is frozen unless model.train_vision_tower=true",
    ),
    "load_in_4bit": Flag(
        SWITCH,
        accept=zero_is(False),
        refused="no 4-bit (bitsandbytes) loading of the trained model here",
    ),
    "aux_loss_coef": Flag(FLOAT, accept=zero_is(0), refused="no MoE load-balancing loss term here"),
    "disable_fast_tokenizer": Flag(
        SWITCH, noop=True, note="the fast tokenizer is always used (same token ids)"
    ),
    "disable_logprobs_flashattn": Flag(
        SWITCH,
        noop=True,
        note="a kernel choice: every forward uses model.attn_implementation",
    ),
    "actor_init_on_gpu": Flag(SWITCH, noop=True, note="models are loaded on their device"),
    "meta_init": Flag(SWITCH, noop=True, note="a host-memory detail of loading"),
    "use_ms": Flag(
        SWITCH, noop=True, note="model.path is a local directory; nothing is downloaded"
    ),
    # --- data -----------------------------------------------------------------------------
    "prompt_data": Flag(
        STR,
        rule="prompt_data",
        keys=("data.train.path", "data.train.preprocessor", "reward.sources"),
        note="the raw string, `name:path,name:path` lists included; with --eval_split and no "
        "--eval_data it is also data.eval.path. Reward data sets by name (`rapidata-i2v:...`, "
        "`hpdv3:...`, the original's grm_vl_rl) are judge prompts (preprocessor judge_pairs) "
        "scored by judge_agreement, unless a reward flag is given",
    ),
    "prompt_data_probs": Flag(STR, rule="prompt_data", keys=("data.train.sampling_probs",)),
    "prompt_split": Flag(STR, **sets("data.train.split")),
    "eval_data": Flag(STR, rule="eval_set", keys=("data.eval.path",)),
    "eval_split": Flag(
        STR,
        rule="eval_set",
        keys=("data.eval.split", "data.eval.path"),
        note="data.eval.path is the --eval_data path, else the --prompt_data path",
    ),
    "input_key": Flag(STR, **both("input_key")),
    "label_key": Flag(
        STR,
        **both("label_key"),
        note="the column naming the row's reward recipe (gsm8k_rule, a reward model's "
        "label), not the answer",
    ),
    "reference_key": Flag(STR, **both("reference_key"), note="the answer's column"),
    "images_key": Flag(STR, **both("images_key")),
    "system_prompt": Flag(STR, **both("system_prompt"), note="taken literally"),
    "system_prompt_path": Flag(
        STR,
        rule="system_prompt_path",
        keys=("data.train.system_prompt", "data.train.system_prompt_file"),
        under=("data.eval.system_prompt",),
        note="a .yaml/.yml file holding one string, or any other text, is the prompt; a YAML "
        "mapping of task type to prompt (the original's grm_vl_rl) is data.train."
        "system_prompt_file: each judge prompt takes its data set's task type's prompt",
        refused="a YAML file holding neither one prompt nor prompts by task type",
    ),
    "input_template": Flag(
        STR,
        accept=lambda text: text == "{}",
        refused="no prompt template here: put the wording in --system_prompt",
        note="`{}` (the prompt unchanged) is accepted",
    ),
    "apply_chat_template": Flag(
        SWITCH,
        **both("apply_chat_template"),
        note="here the chat template is on by default",
    ),
    "prompt_max_len": Flag(INT, **both("max_prompt_length")),
    "max_samples": Flag(INT, **sets("data.train.max_samples")),
    "max_eval_samples": Flag(INT, **sets("data.eval.max_samples", "eval.max_prompts")),
    "mixed_mm_data": Flag(
        SWITCH,
        noop=True,
        note="rows whose images column is empty are text prompts of the vision-language run",
    ),
    "limit_mm_image_per_prompt": Flag(
        INT,
        rule="media_limits",
        keys=("rollout.engine.media_per_prompt",),
        note="vLLM only, as in the original; -1 (no limit), a text-only run or SGLang: "
        "nothing to set",
    ),
    "limit_mm_video_per_prompt": Flag(
        INT,
        **both("max_videos", value=lambda n: None if n < 0 else n),
        note="a row with more videos is a bad row; -1: no limit",
    ),
    "fps": Flag(FLOAT, **both("fps"), note="video frames sampled per second of a clip"),
    "pretrain_data": Flag(STR, refused="no PTX (pre-training loss) data here"),
    "pretrain_data_probs": Flag(STR, noop=True, note="only with --pretrain_data (refused)"),
    "pretrain_split": Flag(STR, noop=True, note="only with --pretrain_data (refused)"),
    "ptx_coef": Flag(FLOAT, noop=True, note="only with --pretrain_data (refused)"),
    "max_len": Flag(
        INT, noop=True, note="deprecated in the original; it only bounds --pretrain_data rows"
    ),
    "annotation_path": Flag(STR, refused="the meme-annotation dataset (godsmeme) is not built"),
    "root_dir": Flag(STR, refused="the meme-image dataset (godsmeme) is not built"),
    # --- algorithm ------------------------------------------------------------------------
    "advantage_estimator": Flag(
        STR,
        **sets(
            "algorithm.advantage_estimator",
            value=lambda name: "opd" if name == "on_policy_distillation" else name,
        ),
        note="on_policy_distillation is opd",
    ),
    "n_samples_per_prompt": Flag(INT, **sets("rollout.n_samples_per_prompt")),
    "kl_estimator": Flag(STR, **sets("algorithm.kl_estimator")),
    "init_kl_coef": Flag(FLOAT, **sets("algorithm.kl_coef")),
    "kl_target": Flag(
        FLOAT,
        **sets("algorithm.kl_target"),
        implied={"algorithm.kl_controller": "adaptive", "algorithm.kl_horizon": 10000},
        note="the adaptive controller (horizon 10000 unless --kl_horizon)",
    ),
    "use_kl_loss": Flag(
        SWITCH,
        rule="kl_placement",
        note="the KL term in the loss: so it is with every group estimator here",
        refused="with --advantage_estimator gae or reinforce, whose KL term goes in the reward",
    ),
    "eps_clip": Flag(FLOAT, **sets("algorithm.clip_eps_low", "algorithm.clip_eps_high")),
    "clip_ratio_low": Flag(FLOAT, **sets("algorithm.clip_eps_low")),
    "clip_ratio_high": Flag(FLOAT, **sets("algorithm.clip_eps_high")),
    "value_clip": Flag(FLOAT, **sets("algorithm.value_clip")),
    "gamma": Flag(FLOAT, **sets("algorithm.gamma")),
    "lambd": Flag(FLOAT, **sets("algorithm.lam")),
    "loss_agg_mode": Flag(STR, **sets("algorithm.agg")),
    "use_gspo": Flag(SWITCH, rule="policy_loss", keys=("algorithm.policy_loss",), note="gspo"),
    "use_gmpo": Flag(SWITCH, rule="policy_loss", keys=("algorithm.policy_loss",), note="gmpo"),
    "use_cpg_loss": Flag(SWITCH, rule="policy_loss", keys=("algorithm.policy_loss",), note="cpgd"),
    "normalize_advantages": Flag(
        SWITCH, noop=True, note="on by default in the original too (GSPO's normalization)"
    ),
    "use_sequence_rewards": Flag(SWITCH, noop=True, note="on by default in the original too"),
    "advantages_norm": Flag(
        SWITCH,
        rule="advantages_norm",
        note="whitening: gae, reinforce and reinforce_baseline whiten here always",
        refused="with another --advantage_estimator (its advantages are not whitened here)",
    ),
    "high_entropy_token_ratio": Flag(
        FLOAT, **sets("algorithm.high_entropy_fraction", value=positive_or_none)
    ),
    "advantage_clip": Flag(FLOAT, **sets("reward.advantage_clip", value=positive_or_none)),
    "reward_clip": Flag(FLOAT, **sets("reward.reward_clip", value=positive_or_none)),
    "reward_clip_range": Flag(
        PAIR,
        **sets("reward.reward_clip", value=lambda pair: pair[1]),
        accept=lambda pair: pair[0] == -pair[1] and pair[1] > 0,
        refused="rewards are clipped to a symmetric range [-c, c] here (reward.reward_clip)",
    ),
    "reward_running_norm": Flag(
        SWITCH,
        **sets("reward.normalize"),
        implied={"reward.normalize_subtract_mean": False},
        note="divides by the running std only, as the original, unless "
        "--reward_running_norm_minus_mean",
    ),
    "reward_running_norm_minus_mean": Flag(SWITCH, **sets("reward.normalize_subtract_mean")),
    "normalize_reward": Flag(SWITCH, **sets("reward.normalize"), origin="LightRFT, OpenRLHF"),
    "normalize_reward_for_critic": Flag(
        SWITCH, accept=zero_is(False), refused="no reward normalization inside the critic here"
    ),
    "overlong_buffer": Flag(
        SWITCH,
        rule="overlong",
        keys=("reward.overlong_buffer",),
        note="the buffer of --overlong_buffer_len tokens (1024 unless given)",
    ),
    "overlong_buffer_len": Flag(
        INT,
        rule="overlong",
        keys=("reward.overlong_buffer",),
        note="alone it also turns the penalty on (OpenRLHF's meaning; the original needs "
        "--overlong_buffer)",
        origin="LightRFT, OpenRLHF",
    ),
    "overlong_buffer_penalty_factor": Flag(FLOAT, **sets("reward.overlong_factor")),
    "dynamic_sampling": Flag(SWITCH, **sets("rollout.dynamic_sampling")),
    "dynamic_sampling_metric": Flag(
        STR,
        accept=zero_is("reward"),
        refused="dynamic sampling keeps the groups whose rewards differ; no other metric here",
    ),
    "max_num_gen_batches": Flag(INT, **sets("rollout.max_sampling_rounds")),
    "temperature": Flag(FLOAT, **sets("rollout.temperature")),
    "top_p": Flag(FLOAT, **sets("rollout.top_p")),
    "generate_max_len": Flag(INT, **sets("rollout.max_new_tokens")),
    "use_fire": Flag(
        SWITCH,
        rule="fire",
        keys=("rollout.first_token_temperature",),
        note="--first_token_temperature (10 unless given)",
    ),
    "first_token_temperature": Flag(
        FLOAT,
        rule="fire",
        keys=("rollout.first_token_temperature",),
        note="only with --use_fire, as in the original",
    ),
    "enable_ema": Flag(SWITCH, accept=zero_is(False), refused="no EMA copy of the model here"),
    # --- critic ---------------------------------------------------------------------------
    "critic_pretrain": Flag(
        STR,
        rule="critic",
        note="the critic starts from the policy's checkpoint here: the --pretrain path",
        refused="another checkpoint (no critic from another model here)",
    ),
    "critic_learning_rate": Flag(FLOAT, rule="critic", keys=("optim.critic_lr",)),
    "freezing_actor_steps": Flag(
        INT,
        accept=lambda steps: steps <= 0,
        refused="no critic warm-up with a frozen policy here",
    ),
    "value_head_prefix": Flag(
        STR,
        noop=True,
        note="the name of the saved value head; checkpoints here hold the critic whole",
    ),
    "save_value_network": Flag(
        SWITCH, noop=True, note="checkpoints hold the critic with the run state"
    ),
    # --- optimizer ------------------------------------------------------------------------
    "actor_learning_rate": Flag(
        FLOAT,
        **sets("optim.lr"),
        implied={"optim.schedule": "cosine", "optim.min_lr_ratio": 0.1},
        note="the original's schedule: cosine to 0.1 x the rate",
    ),
    "lr_warmup_ratio": Flag(
        FLOAT,
        **sets("optim.warmup_ratio"),
        implied={"optim.schedule": "cosine", "optim.min_lr_ratio": 0.1},
        note="warm-up as a fraction of the optimizer steps (ceil)",
    ),
    "adam_betas": Flag(PAIR, **sets("optim.betas", value=list)),
    "l2": Flag(FLOAT, **sets("optim.weight_decay")),
    "max_norm": Flag(FLOAT, **sets("optim.max_grad_norm")),
    # --- batches (global sizes are divided over the ranks) ---------------------------------
    "rollout_batch_size": Flag(
        INT, rule="global_size", keys=("rollout.prompts_per_step",), note="global: / ranks"
    ),
    "train_batch_size": Flag(
        INT, rule="global_size", keys=("train.mini_batch_size",), note="global: / ranks"
    ),
    "micro_train_batch_size": Flag(INT, **sets("train.micro_batch_size")),
    "micro_rollout_batch_size": Flag(INT, **sets("rollout.forward_micro_batch_size")),
    "max_epochs": Flag(INT, **sets("train.epochs"), note="passes over each experience batch"),
    "num_episodes": Flag(
        INT, **sets("train.episodes"), note="total_steps follows from the dataset's size"
    ),
    "seed": Flag(INT, **sets("train.seed")),
    # --- backend --------------------------------------------------------------------------
    "fsdp": Flag(SWITCH, rule="strategy", keys=("backend.strategy",), note="fsdp2"),
    "zero_stage": Flag(
        INT,
        rule="strategy",
        keys=("backend.strategy", "backend.strategy.zero_stage"),
        note="deepspeed ZeRO-N; with --fsdp only 3 (FSDP2 shards like ZeRO-3)",
    ),
    "adam_offload": Flag(
        SWITCH,
        rule="strategy",
        keys=("backend.strategy.cpu_offload",),
        note="DeepSpeed: the optimizer on the CPU. With --fsdp: optimizer state moved to "
        "host memory outside the update, which this project does by default with a "
        "vLLM/SGLang engine: nothing to set",
    ),
    "fsdp_cpu_offload": Flag(
        SWITCH,
        rule="strategy",
        keys=("backend.strategy.cpu_offload",),
        note="FSDP2 parameter, gradient and optimizer offload (implies fsdp2)",
    ),
    "sp_size": Flag(INT, **sets("backend.sequence_parallel_size")),
    "grad_accum_dtype": Flag(
        STR,
        accept=lambda dtype: dtype in ("fp32", "float32"),
        refused="gradients accumulate in fp32 here",
    ),
    "overlap_comm": Flag(SWITCH, noop=True, note="a DeepSpeed communication-overlap detail"),
    "zpg": Flag(INT, noop=True, note="ZeRO++ partition size: a communication detail"),
    "use_mp_opt": Flag(
        SWITCH, noop=True, note="a memory detail: optimizer state and master weights are fp32 here"
    ),
    "initial_model_shard_size": Flag(INT, noop=True, note="a sharding detail of the reference"),
    "no_shard_vit": Flag(SWITCH, noop=True, note="a sharding detail of the vision tower"),
    "gradient_checkpointing_use_reentrant": Flag(
        SWITCH, noop=True, note="an activation-recompute implementation detail"
    ),
    "local_rank": Flag(INT, noop=True, note="set by the launcher"),
    # --- engines --------------------------------------------------------------------------
    "engine_type": Flag(STR, **sets("rollout.engine")),
    "engine_mem_util": Flag(
        FLOAT,
        **sets("rollout.engine.memory_fraction"),
        implied={"rollout.engine": "vllm"},
        note="implies vllm (the original's default engine) unless an engine is set",
    ),
    "engine_tp_size": Flag(
        INT,
        **sets("rollout.engine.tensor_parallel_size"),
        implied={"rollout.engine": "vllm"},
        note="implies vllm unless an engine is set",
    ),
    "enable_engine_sleep": Flag(
        SWITCH, noop=True, note="the engine sleeps outside generation (the original's default)"
    ),
    "disable_engine_sleep": Flag(
        SWITCH, noop=True, note="a memory/latency detail: the engine always sleeps here"
    ),
    "rm_use_engine": Flag(
        SWITCH,
        noop=True,
        note="reward models run colocated; reward.sources[*].engine=vllm puts one on vLLM",
    ),
    "rm_engine_cudagraph": Flag(SWITCH, noop=True, note="a reward-engine speed detail"),
    "rm_engine_tp": Flag(
        INT,
        noop=True,
        note="not a flag of the original's trainer (its parser refuses it); a reward "
        "engine's tensor-parallel size",
        origin="a LightRFT script",
    ),
    # --- reward ---------------------------------------------------------------------------
    "reward_pretrain": Flag(
        STR,
        rule="reward",
        keys=("reward.recipes.<label>", "reward.sources"),
        note='`{"label": "path", ...}`: one scalar reward model per label; a plain path: one '
        "for every row; `{}`: none",
    ),
    "remote_rm_url": Flag(
        STR,
        rule="reward",
        keys=("reward.sources", "teacher.url"),
        note="a reward server speaking the original's protocol (type remote, protocol "
        "original: POST {queries, prompts, references} -> {rewards}), or a .py file whose "
        "reward_func(queries, prompts, labels) scores (type python, convention openrlhf); "
        "docs/reward-models.md. With on_policy_distillation: the served teacher (SGLang's "
        "/generate or vLLM's /v1/completions, asked for the log-probs of the student's token "
        "ids; docs/algorithms.md)",
    ),
    # --- checkpoints, evaluation, logging ---------------------------------------------------
    "save_path": Flag(STR, **sets("logging.run_dir")),
    "ckpt_path": Flag(
        STR,
        rule="ckpt_path",
        keys=("logging.run_dir",),
        note="checkpoints go to <run_dir>/checkpoints; the run directory when no --save_path",
        refused="a path other than --save_path (no checkpoint directory apart from the run's)",
    ),
    "ckpt_path_local": Flag(STR, noop=True, note="defined but unused by the original's trainer"),
    "save_steps": Flag(INT, **sets("checkpoint.every", value=positive_or_none)),
    "max_ckpt_num": Flag(INT, **sets("checkpoint.keep_last")),
    "max_ckpt_mem": Flag(
        INT, noop=True, note="a disk cap: checkpoints are pruned by number (--max_ckpt_num)"
    ),
    "load_checkpoint": Flag(
        SWITCH,
        **sets("checkpoint.resume", value=const("auto")),
        note="auto: resume when the run directory holds a run, else start",
    ),
    "disable_ds_ckpt": Flag(
        SWITCH, noop=True, note="a disk detail: checkpoints hold the run state"
    ),
    "save_hf_ckpt": Flag(
        SWITCH,
        noop=True,
        note="the final model is written in HF format; `lightrft checkpoints export` "
        "converts any checkpoint",
    ),
    "eval_steps": Flag(
        INT,
        **sets("eval.every", value=positive_or_none),
        note="-1: none during the run (the original evaluates once per episode)",
    ),
    "logging_steps": Flag(INT, noop=True, note="metrics are logged every step"),
    "print_replay_buffer_stats": Flag(
        SWITCH, noop=True, note="metrics.jsonl holds the batch statistics of every step"
    ),
    "save_trajectories": Flag(
        SWITCH, noop=True, note="samples.jsonl holds logging.log_samples_per_step a step"
    ),
    "num_trajectories_to_save": Flag(
        INT,
        **sets("logging.log_samples_per_step"),
        note="saved every step here (the original: at each checkpoint)",
    ),
    "mark_high_entropy_tokens": Flag(
        SWITCH, noop=True, note="`lightrft report` renders the saved tokens' entropies"
    ),
    "trajectory_analysis": Flag(
        SWITCH, noop=True, note="extra logged text statistics (repeat, reflection): not computed"
    ),
    "log_dir": Flag(STR, noop=True, note="length plots: `lightrft report` draws them"),
    "plot_every": Flag(INT, noop=True, note="with --log_dir"),
    "use_wandb": Flag(
        Kind.OPTIONAL_STR,
        rule="trackers",
        keys=("logging.trackers", "$WANDB_API_KEY"),
        note="the key never enters the config; an empty key: no W&B (as the original)",
    ),
    "wandb_project": Flag(STR, **sets("logging.wandb_project"), origin="LightRFT, OpenRLHF"),
    "wandb_run_name": Flag(STR, rule="trackers", keys=("$WANDB_NAME",)),
    "wandb_group": Flag(STR, rule="trackers", keys=("$WANDB_RUN_GROUP",)),
    "wandb_org": Flag(STR, rule="trackers", keys=("$WANDB_ENTITY",)),
    "use_tensorboard": Flag(
        STR,
        rule="trackers",
        keys=("logging.trackers",),
        note="without W&B, as the original; written to <run_dir>/tensorboard",
    ),
    # --- reward-model training flags (lightrft rm train) ------------------------------------
    **{
        name: Flag(WORDS if name == "heads_types" else STR, refused=RM_TRAINER)
        for name in (
            "train_data",
            "task_instruction",
            "loss_type",
            "margin",
            "pooling_method",
            "heads_types",
            "probing_layer",
            "scale_for_train",
        )
    },
    # --- OpenRLHF flags ---------------------------------------------------------------------
    "policy_loss": Flag(STR, **sets("algorithm.policy_loss"), origin="OpenRLHF"),
    "kl_horizon": Flag(FLOAT, **sets("algorithm.kl_horizon"), origin="OpenRLHF"),
    "num_steps": Flag(INT, **sets("train.total_steps"), origin="OpenRLHF"),
    "learning_rate": Flag(FLOAT, **sets("optim.lr"), origin="OpenRLHF"),
    "lr_warmup_steps": Flag(INT, **sets("optim.warmup_steps"), origin="OpenRLHF"),
    "eps_clip_low_high": Flag(
        PAIR,
        keys=("algorithm.clip_eps_low", "algorithm.clip_eps_high"),
        rule="clip_pair",
        origin="OpenRLHF",
    ),
    "dual_clip": Flag(FLOAT, **sets("algorithm.dual_clip"), origin="OpenRLHF"),
    "entropy_loss_coef": Flag(FLOAT, **sets("algorithm.entropy_coef"), origin="OpenRLHF"),
    "overlong_penalty_factor": Flag(FLOAT, **sets("reward.overlong_factor"), origin="OpenRLHF"),
    "vllm_is_truncated_threshold": Flag(FLOAT, **sets("algorithm.tis_cap"), origin="OpenRLHF"),
    "enable_vllm_is_correction": Flag(
        SWITCH,
        noop=True,
        implied={"algorithm.tis_cap": 2.0},
        note="algorithm.tis_cap=2 (OpenRLHF's threshold) unless set",
        origin="OpenRLHF",
    ),
    "fp8_rollout": Flag(
        SWITCH, **sets("rollout.fp8"), implied={"rollout.engine": "vllm"}, origin="OpenRLHF"
    ),
    "resume": Flag(SWITCH, **sets("checkpoint.resume"), origin="this project"),
    "overwrite": Flag(SWITCH, **sets("logging.overwrite"), origin="this project"),
}
"""The flags, by name (without ``--``)."""

PENDING_KEYS: frozenset[str] = frozenset()
"""Keys the table sets that the config schema does not hold yet (none at present: work that
adds a key lists it here until the key exists); a test checks every other key exists."""
