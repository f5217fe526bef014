#!/usr/bin/env bash
# GRPO of a vision-language model on Geo3K with the rule reward geo3k_rule (0.9 answer accuracy
# + 0.1 <think>/\boxed{} format), the counterpart of the original LightRFT's script of the same
# name, with its flags.
#
#   python examples/gsm8k_geo3k/data_preprocess/geo3k.py --input_dir /data/geometry3k --local_save_dir /data/geo3k
#   MODEL_PATH=/models/Qwen2.5-VL-7B-Instruct DATA_PATH=/data/geo3k bash examples/gsm8k_geo3k/run_grpo_geo3k_qwen2.5_vl_7b.sh
#
# Environment (all optional): MODEL_PATH (a Qwen2-VL / Qwen2.5-VL directory), DATA_PATH (the
# preprocessed directory), NPROC (GPUs; 0: one smoke-sized step on the CPU), SAVE_PATH (the run
# directory), WANDB_API_KEY / WANDB_PROJECT, LIGHTRFT_DRY_RUN=1 (print the configuration only).
# Extra arguments (flags or key=value overrides) are passed on after the script's own.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"

MODEL_PATH=${MODEL_PATH:-/path/to/Qwen2.5-VL-7B-Instruct}
DATA_PATH=${DATA_PATH:-/path/to/preprocessed/geo3k}
EXPERIMENT_NAME=${EXPERIMENT_NAME:-lightrft-geo3k-grpo-training}
SAVE_PATH=${SAVE_PATH:-results/$EXPERIMENT_NAME/$EXPERIMENT_NAME-$STAMP}

# model.modality=vision-language: the original trains a vision-language model unless
# --text_only is given; here it is said explicitly.
lightrft_train grpo \
  --pretrain "$MODEL_PATH" \
  model.modality=vision-language \
  --save_trajectories \
  --print_replay_buffer_stats \
  --loss_agg_mode seq-mean-token-mean \
  --fsdp \
  --rm_use_engine \
  --mixed_mm_data \
  --reward_pretrain '{}' \
  --save_path "$SAVE_PATH" \
  --ckpt_path "$SAVE_PATH" \
  --micro_train_batch_size 4 \
  --train_batch_size 128 \
  --micro_rollout_batch_size 8 \
  --rollout_batch_size 128 \
  --advantage_estimator group_norm \
  --max_epochs 1 \
  --num_episodes 20 \
  --lr_warmup_ratio 0.03 \
  --n_samples_per_prompt 8 \
  --prompt_max_len 1024 \
  --generate_max_len 2048 \
  --zero_stage 3 \
  --bf16 \
  --actor_learning_rate 1e-6 \
  --use_kl_loss \
  --init_kl_coef 0.01 \
  --kl_estimator k3 \
  --prompt_data "$DATA_PATH" \
  --input_key prompt \
  --images_key images \
  --label_key label \
  --eval_steps 20 \
  --eval_split test \
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
  --l2 1.0e-2 \
  --freeze_prefix \
  --adam_offload \
  --limit_mm_image_per_prompt 10 \
  --use_wandb "${WANDB_API_KEY:-}" \
  --wandb_project "${WANDB_PROJECT:-LightRFT-Geo3K-Experiments}" \
  --wandb_run_name "$EXPERIMENT_NAME-$STAMP" \
  "${CPU_ARGS[@]}" "$@"
