#!/usr/bin/env bash
# PPO (GAE, a critic) of a vision-language model on Geo3K with the rule reward geo3k_rule, the
# counterpart of the original LightRFT's script of the same name, with its flags.
#
#   MODEL_PATH=/models/Qwen2.5-VL-7B-Instruct DATA_PATH=/data/geo3k bash examples/gsm8k_geo3k/run_ppo_geo3k_qwen2.5_vl_7b.sh
#
# NOT RUNNABLE YET: this project has no critic (value model) for vision-language models, so
# the run stops at start-up naming that; the flags themselves are all read (LIGHTRFT_DRY_RUN=1).
# The critic starts from the policy's checkpoint (CRITIC_PATH may only equal MODEL_PATH: a
# critic from another checkpoint is not offered).
#
# Environment (all optional): MODEL_PATH, CRITIC_PATH, DATA_PATH, NPROC (GPUs; 0: CPU smoke
# size), SAVE_PATH, WANDB_API_KEY / WANDB_PROJECT, LIGHTRFT_DRY_RUN=1.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"

MODEL_PATH=${MODEL_PATH:-/path/to/Qwen2.5-VL-7B-Instruct}
CRITIC_PATH=${CRITIC_PATH:-$MODEL_PATH}
DATA_PATH=${DATA_PATH:-/path/to/preprocessed/geo3k}
EXPERIMENT_NAME=${EXPERIMENT_NAME:-lightrft-geo3k-ppo-training}
SAVE_PATH=${SAVE_PATH:-results/$EXPERIMENT_NAME/$EXPERIMENT_NAME-$STAMP}

# GAE, the KL term in the reward (no --use_kl_loss), k1, eps/value clip, gamma, lambda: as the
# original's PPO script. model.modality=vision-language: the original's default (no --text_only).
lightrft_train ppo \
  --pretrain "$MODEL_PATH" \
  model.modality=vision-language \
  --critic_pretrain "$CRITIC_PATH" \
  --save_trajectories \
  --fsdp \
  --mixed_mm_data \
  --save_path "$SAVE_PATH" \
  --ckpt_path "$SAVE_PATH" \
  --micro_train_batch_size 4 \
  --train_batch_size 128 \
  --micro_rollout_batch_size 4 \
  --rollout_batch_size 128 \
  --advantage_estimator gae \
  --max_epochs 1 \
  --num_episodes 30 \
  --lr_warmup_ratio 0.03 \
  --n_samples_per_prompt 2 \
  --prompt_max_len 1024 \
  --generate_max_len 2048 \
  --zero_stage 3 \
  --bf16 \
  --actor_learning_rate 1e-6 \
  --critic_learning_rate 9e-6 \
  --init_kl_coef 0.01 \
  --kl_estimator k1 \
  --eps_clip 0.2 \
  --value_clip 0.2 \
  --gamma 1.0 \
  --lambd 0.95 \
  --prompt_data "$DATA_PATH" \
  --input_key prompt \
  --images_key images \
  --label_key label \
  --eval_split test \
  --max_eval_samples 700 \
  --apply_chat_template \
  --flash_attn \
  --gradient_checkpointing \
  --save_steps 20 \
  --max_ckpt_num 2 \
  --engine_type sglang \
  --engine_mem_util 0.6 \
  --engine_tp_size "${ENGINE_TP:-2}" \
  --enable_engine_sleep \
  --system_prompt "$BOXED_SYSTEM_PROMPT" \
  --advantages_norm \
  --l2 1.0e-2 \
  --freeze_prefix \
  --fsdp_cpu_offload \
  --limit_mm_image_per_prompt 10 \
  --use_wandb "${WANDB_API_KEY:-}" \
  --wandb_project "${WANDB_PROJECT:-LightRFT-Geo3K-PPO}" \
  --wandb_run_name "$EXPERIMENT_NAME-$STAMP" \
  "${CPU_ARGS[@]}" "$@"
