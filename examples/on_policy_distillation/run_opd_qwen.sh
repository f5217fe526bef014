#!/usr/bin/env bash
# On-policy distillation: a student (Qwen2.5-0.5B-Instruct) trained on its own samples towards a
# teacher's token log-probabilities (Qwen2.5-7B-Instruct), the counterpart of the original
# LightRFT's on_policy_distillation/run_opd_qwen.sh (its PR #43), with its flags.
#
#   STUDENT_MODEL_PATH=/models/Qwen2.5-0.5B-Instruct TEACHER_MODEL_PATH=/models/Qwen2.5-7B-Instruct \
#   DATA_PATH=/data/prompts.jsonl bash examples/on_policy_distillation/run_opd_qwen.sh
#
# Differs from the original: the teacher is a local model directory loaded by the run
# (teacher.path), not an SGLang server started beside it, so the original's
# `--remote_rm_url http://HOST:PORT/generate` is left out (a remote teacher is not built here)
# and no server is started. DATA_PATH: JSON lines (or parquet) with a "prompt" column.
# Environment (all optional): STUDENT_MODEL_PATH (or MODEL_PATH), TEACHER_MODEL_PATH, DATA_PATH,
# NPROC (GPUs; 0: one smoke-sized step on the CPU), SAVE_PATH, WANDB_API_KEY / WANDB_PROJECT,
# LIGHTRFT_DRY_RUN=1 (print the configuration only).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"

STUDENT_MODEL_PATH=${STUDENT_MODEL_PATH:-${MODEL_PATH:-/path/to/Qwen2.5-0.5B-Instruct}}
TEACHER_MODEL_PATH=${TEACHER_MODEL_PATH:-/path/to/Qwen2.5-7B-Instruct}
DATA_PATH=${DATA_PATH:-/path/to/your/dataset.jsonl}
EXPERIMENT_NAME=${EXPERIMENT_NAME:-opd-qwen-7b-to-0.5b}
SAVE_PATH=${SAVE_PATH:-results/$EXPERIMENT_NAME/$EXPERIMENT_NAME-$STAMP}

# --use_wandb without a key (as the original): W&B with the WANDB_API_KEY of the environment.
WANDB=()
if [ -n "${WANDB_API_KEY:-}" ]; then WANDB=(--use_wandb); fi

# The advantage is the teacher's log-prob minus the student's on each sampled token; the rows
# hold a prompt only, so the logged reward is one that needs no answer (the length penalty).
lightrft_train grpo \
  --pretrain "$STUDENT_MODEL_PATH" \
  "teacher.path=$TEACHER_MODEL_PATH" \
  data.train.reference_key=null \
  'reward.sources=[{type: length}]' \
  --save_trajectories \
  --advantage_estimator on_policy_distillation \
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
  --n_samples_per_prompt 4 \
  --prompt_max_len 1024 \
  --generate_max_len 2048 \
  --zero_stage 3 \
  --bf16 \
  --actor_learning_rate 1e-6 \
  --init_kl_coef 0.01 \
  --kl_estimator k3 \
  --prompt_data "$DATA_PATH" \
  --max_ckpt_num 3 \
  --max_ckpt_mem 160 \
  "${WANDB[@]}" \
  --wandb_project "${WANDB_PROJECT:-LightRFT-OnPolicyDistillation}" \
  --wandb_run_name "$EXPERIMENT_NAME-$STAMP" \
  --logging_steps 1 \
  --eval_steps -1 \
  --rm_engine_tp "${ENGINE_TP:-2}" \
  "${CPU_ARGS[@]}" "$@"
