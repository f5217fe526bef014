"""The flag table itself: it holds every flag of the original, every key it sets exists (or
is being added), every rule it names exists, and docs/migrating.md shows it as it is."""

from __future__ import annotations

import pytest

from lightrft.entrypoints.config import legacy_flag_docs
from lightrft.entrypoints.config.legacy_flag_spec import Status
from lightrft.entrypoints.config.legacy_flag_table import FLAGS, PENDING_KEYS
from lightrft.entrypoints.config.legacy_rules import RULES
from lightrft.entrypoints.config.loading import ConfigError, load_config

# the add_argument flags of the original's lightrft/utils/cli_args.py, its examples'
# train_colocate.py and reward-model trainers, on main and its PR branches (#38 #39 #41 #43
# #47 #49 #50 #51) of github.com/opendilab/LightRFT
ORIGINAL_FLAGS = [
    "actor_init_on_gpu",
    "actor_learning_rate",
    "adam_betas",
    "adam_offload",
    "advantage_clip",
    "advantage_estimator",
    "advantages_norm",
    "annotation_path",
    "apply_chat_template",
    "aux_loss_coef",
    "bf16",
    "chunk_size",
    "ckpt_path",
    "ckpt_path_local",
    "clip_ratio_high",
    "clip_ratio_low",
    "critic_learning_rate",
    "critic_pretrain",
    "disable_ds_ckpt",
    "disable_engine_sleep",
    "disable_fast_tokenizer",
    "disable_logprobs_flashattn",
    "dynamic_sampling",
    "dynamic_sampling_metric",
    "enable_ema",
    "enable_engine_sleep",
    "engine_mem_util",
    "engine_tp_size",
    "engine_type",
    "eps_clip",
    "eval_data",
    "eval_split",
    "eval_steps",
    "first_token_temperature",
    "flash_attn",
    "fps",
    "freeze_prefix",
    "freezing_actor_steps",
    "fsdp",
    "fsdp_cpu_offload",
    "fused_linear_logprob",
    "gamma",
    "generate_max_len",
    "grad_accum_dtype",
    "gradient_checkpointing",
    "gradient_checkpointing_use_reentrant",
    "heads_types",
    "high_entropy_token_ratio",
    "images_key",
    "init_kl_coef",
    "initial_model_shard_size",
    "input_key",
    "input_template",
    "kl_estimator",
    "kl_target",
    "l2",
    "label_key",
    "lambd",
    "limit_mm_image_per_prompt",
    "limit_mm_video_per_prompt",
    "load_checkpoint",
    "load_in_4bit",
    "local_rank",
    "log_dir",
    "logging_steps",
    "lora_alpha",
    "lora_dropout",
    "lora_rank",
    "loss_agg_mode",
    "loss_type",
    "lr_warmup_ratio",
    "margin",
    "mark_high_entropy_tokens",
    "max_ckpt_mem",
    "max_ckpt_num",
    "max_epochs",
    "max_eval_samples",
    "max_len",
    "max_norm",
    "max_num_gen_batches",
    "max_pixels",
    "max_samples",
    "meta_init",
    "micro_rollout_batch_size",
    "micro_train_batch_size",
    "mixed_mm_data",
    "n_samples_per_prompt",
    "no_shard_vit",
    "normalize_advantages",
    "normalize_reward",
    "normalize_reward_for_critic",
    "num_episodes",
    "num_trajectories_to_save",
    "overlap_comm",
    "overlong_buffer",
    "overlong_buffer_len",
    "overlong_buffer_penalty_factor",
    "packing_samples",
    "plot_every",
    "pooling_method",
    "pretrain",
    "pretrain_data",
    "pretrain_data_probs",
    "pretrain_split",
    "print_replay_buffer_stats",
    "probing_layer",
    "prompt_data",
    "prompt_data_probs",
    "prompt_max_len",
    "prompt_split",
    "ptx_coef",
    "reference_key",
    "remote_rm_url",
    "reward_clip",
    "reward_clip_range",
    "reward_pretrain",
    "reward_running_norm",
    "reward_running_norm_minus_mean",
    "rm_engine_cudagraph",
    "rm_use_engine",
    "rollout_batch_size",
    "root_dir",
    "save_hf_ckpt",
    "save_path",
    "save_steps",
    "save_trajectories",
    "save_value_network",
    "scale_for_train",
    "seed",
    "sp_size",
    "system_prompt",
    "system_prompt_path",
    "target_modules",
    "task_instruction",
    "temperature",
    "text_only",
    "top_p",
    "train_batch_size",
    "train_data",
    "trajectory_analysis",
    "use_cpg_loss",
    "use_fire",
    "use_gmpo",
    "use_gspo",
    "use_kl_loss",
    "use_mp_opt",
    "use_ms",
    "use_sequence_rewards",
    "use_tensorboard",
    "use_wandb",
    "value_clip",
    "value_head_prefix",
    "wandb_group",
    "wandb_org",
    "wandb_project",
    "wandb_run_name",
    "zero_stage",
    "zpg",
]


def test_every_flag_of_the_original_is_in_the_table() -> None:
    assert len(ORIGINAL_FLAGS) == 158
    assert sorted(set(ORIGINAL_FLAGS) - set(FLAGS)) == []


def test_each_flag_says_what_it_does() -> None:
    for name, flag in FLAGS.items():
        if flag.status is Status.NOOP and not flag.conditional and flag.rule is None:
            assert flag.note or flag.implied, f"--{name}: a no-op says why"
        if flag.rule is not None:
            assert flag.rule in RULES, f"--{name}: rule {flag.rule!r}"
        if flag.status is Status.REFUSED:
            assert not flag.keys and flag.refused


def _keys() -> list[str]:
    keys = {
        key
        for flag in FLAGS.values()
        for key in (*flag.keys, *flag.under, *flag.implied)
        if not key.startswith("$") and "<label>" not in key
    }
    return sorted(keys - PENDING_KEYS)


@pytest.mark.parametrize("key", _keys())
def test_every_key_of_the_table_exists(key: str) -> None:
    """A value of the wrong type is refused by the key's own check, never as unknown."""
    try:
        load_config(overrides={key: [[]]})
    except ConfigError as exc:
        assert f"{key}: unknown key" not in str(exc) and "not a section" not in str(exc), exc


def test_the_docs_table_is_the_table() -> None:
    assert legacy_flag_docs.main(["--check"]) == 0, (
        "docs/migrating.md is out of date: python -m lightrft.entrypoints.config.legacy_flag_docs"
    )
