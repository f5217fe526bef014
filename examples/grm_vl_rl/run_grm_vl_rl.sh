#!/usr/bin/env bash
# GRPO of a vision-language judge (RL with verifiable rewards on preference pairs), the
# counterpart of the original LightRFT's grm_vl_rl/run_grm_vl_rl.sh, with its flags.
#
#   MODEL_PATH=/models/Qwen2.5-VL-7B-Instruct \
#   DATA_PATH=rapidata-i2v:/data/rapidata/image-to-video/data/train.parquet \
#   bash examples/grm_vl_rl/run_grm_vl_rl.sh
#
# DATA_PATH is the original's list of reward data sets, name:path,name:path (rapidata-i2v,
# rapidata-t2v, hpdv3 ..., docs/reward-models.md): their preference pairs become judge prompts
# in the original's layout (both generations shown, videos sampled at --fps), each with the
# system prompt of its data set's task type from --system_prompt_path (system_prompts.yaml
# here), and the reward is the original's: the <answer>Video 1 is better</answer> verdict
# agreeing with the human preference, plus a <think> block before it (judge_agreement,
# verdict: answer). docs/migrating.md, docs/reward-models.md "Judges trained by RL".
#
# GPU-ONLY AND UNVERIFIED at this size (one step on a tiny Qwen2-VL with image and video pairs:
# tests/e2e/test_examples.py, slow). Environment (all optional): MODEL_PATH, DATA_PATH,
# SYSTEM_PROMPT_PATH, NPROC, SAVE_PATH, WANDB_API_KEY / WANDB_PROJECT, LIGHTRFT_DRY_RUN=1
# (print the configuration only).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"

MODEL_PATH=${MODEL_PATH:-/path/to/Qwen2.5-VL-7B-Instruct}
DATA_PATH=${DATA_PATH:-rapidata-i2v:/path/to/rapidata/image-to-video/data/train.parquet}
SYSTEM_PROMPT_PATH=${SYSTEM_PROMPT_PATH:-$HERE/system_prompts.yaml}
EXPERIMENT_NAME=${EXPERIMENT_NAME:-LightRFT-GRM-VL-GRPO}
SAVE_PATH=${SAVE_PATH:-results/$EXPERIMENT_NAME/$EXPERIMENT_NAME-$STAMP}

# model.modality=vision-language: the original trains a vision-language model unless
# --text_only is given; here it is said explicitly.
lightrft_train grpo \
  --pretrain "$MODEL_PATH" \
  model.modality=vision-language \
  --save_trajectories \
  --fsdp \
  --use_kl_loss \
  --mixed_mm_data \
  --save_path "$SAVE_PATH" \
  --ckpt_path "$SAVE_PATH" \
  --micro_train_batch_size 8 \
  --train_batch_size 64 \
  --micro_rollout_batch_size 8 \
  --rollout_batch_size 32 \
  --advantage_estimator group_norm \
  --max_epochs 1 \
  --num_episodes 2 \
  --lr_warmup_ratio 0.03 \
  --n_samples_per_prompt 8 \
  --prompt_max_len 12288 \
  --generate_max_len 4096 \
  --zero_stage 3 \
  --bf16 \
  --actor_learning_rate 1e-6 \
  --init_kl_coef 0.001 \
  --kl_estimator k3 \
  --prompt_data "$DATA_PATH" \
  --flash_attn \
  --gradient_checkpointing \
  --save_steps 20 \
  --max_ckpt_num 5 \
  --engine_mem_util 0.8 \
  --engine_tp_size "${ENGINE_TP:-1}" \
  --enable_engine_sleep \
  --system_prompt_path "$SYSTEM_PROMPT_PATH" \
  --l2 1.0e-2 \
  --freeze_prefix \
  --adam_offload \
  --limit_mm_image_per_prompt 2 \
  --limit_mm_video_per_prompt 2 \
  --use_wandb "${WANDB_API_KEY:-}" \
  --wandb_project "${WANDB_PROJECT:-$EXPERIMENT_NAME}" \
  --wandb_run_name "$EXPERIMENT_NAME-$STAMP" \
  --fps 2.0 \
  --max_pixels 282240 \
  --trajectory_analysis \
  "${CPU_ARGS[@]}" "$@"
