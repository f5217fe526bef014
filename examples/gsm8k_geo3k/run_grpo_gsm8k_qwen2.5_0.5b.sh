#!/usr/bin/env bash
# GRPO on GSM8K with the rule reward gsm8k_rule (0.9 answer accuracy + 0.1 <think>/\boxed{}
# format), the counterpart of the original LightRFT's script of the same name, with its flags.
#
#   python examples/gsm8k_geo3k/data_preprocess/gsm8k.py --input_dir /data/gsm8k_raw --local_save_dir /data/gsm8k
#   MODEL_PATH=/models/Qwen2.5-0.5B-Instruct DATA_PATH=/data/gsm8k bash examples/gsm8k_geo3k/run_grpo_gsm8k_qwen2.5_0.5b.sh
#
# Environment (all optional):
#   MODEL_PATH  the policy (default Qwen/Qwen2.5-0.5B-Instruct: a local directory is expected)
#   DATA_PATH   the preprocessed directory (train/test files; the test split is evaluated)
#   NPROC       GPUs to use (default: all); 0 (no GPU) runs one smoke-sized step on the CPU
#   SAVE_PATH   the run directory (checkpoints, metrics, final model)
#   WANDB_API_KEY, WANDB_PROJECT   W&B logging (none when the key is empty)
#   LIGHTRFT_DRY_RUN=1             print the resolved configuration instead of training
# Extra arguments (flags or key=value overrides) are passed on after the script's own.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"

MODEL_PATH=${MODEL_PATH:-Qwen/Qwen2.5-0.5B-Instruct}
DATA_PATH=${DATA_PATH:-/path/to/preprocessed/gsm8k}
EXPERIMENT_NAME=${EXPERIMENT_NAME:-lightrft-gsm8k-grpo-training}
SAVE_PATH=${SAVE_PATH:-results/$EXPERIMENT_NAME/$EXPERIMENT_NAME-$STAMP}

# --engine_type sglang: on GPUs; the CPU smoke run generates with Hugging Face (SMOKE).
lightrft_train grpo \
  --pretrain "$MODEL_PATH" \
  --save_trajectories \
  --advantage_estimator group_norm \
  --fsdp \
  --use_kl_loss \
  --flash_attn \
  --rm_use_engine \
  --reward_pretrain '{}' \
  --save_path "$SAVE_PATH" \
  --ckpt_path "$SAVE_PATH" \
  --micro_train_batch_size 4 \
  --train_batch_size 128 \
  --micro_rollout_batch_size 4 \
  --rollout_batch_size 128 \
  --max_epochs 1 \
  --num_episodes 30 \
  --lr_warmup_ratio 0.03 \
  --n_samples_per_prompt 5 \
  --prompt_max_len 1024 \
  --generate_max_len 2048 \
  --zero_stage 3 \
  --bf16 \
  --actor_learning_rate 1e-6 \
  --init_kl_coef 0.01 \
  --kl_estimator k3 \
  --prompt_data "$DATA_PATH" \
  --input_key prompt \
  --label_key label \
  --eval_steps 20 \
  --eval_split test \
  --max_eval_samples 1319 \
  --apply_chat_template \
  --gradient_checkpointing \
  --save_steps 20 \
  --max_ckpt_num 3 \
  --engine_type sglang \
  --engine_mem_util 0.6 \
  --engine_tp_size "${ENGINE_TP:-2}" \
  --enable_engine_sleep \
  --system_prompt "$BOXED_SYSTEM_PROMPT" \
  --l2 1.0e-2 \
  --freeze_prefix \
  --adam_offload \
  --text_only \
  --use_wandb "${WANDB_API_KEY:-}" \
  --wandb_project "${WANDB_PROJECT:-LightRFT-GSM8K-Experiments}" \
  --wandb_run_name "$EXPERIMENT_NAME-$STAMP" \
  "${CPU_ARGS[@]}" "$@"
