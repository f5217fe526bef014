#!/usr/bin/env bash
# On-policy distillation: a student (Qwen2.5-0.5B-Instruct) trained on its own samples towards a
# teacher's token log-probabilities (Qwen2.5-7B-Instruct), the counterpart of the original
# LightRFT's on_policy_distillation/run_opd_qwen.sh (its PR #43), with its flags.
#
# The teacher is, as in the original, a served model named by --remote_rm_url (SGLang's
# native /generate, or vLLM's /v1/completions): the student's token ids are sent as they are
# and the server returns the teacher's log-prob of every token (docs/algorithms.md,
# "On-policy distillation"). Three ways to give it:
#   TEACHER_URL=http://HOST:PORT/generate        a server already running
#   START_TEACHER=1 TEACHER_MODEL_PATH=DIR       start SGLang on TEACHER_GPU (port TEACHER_PORT)
#                                                as the original does, stopped on exit
#   TEACHER_MODEL_PATH=DIR (neither of the above) the teacher loaded by the run (teacher.path)
#
#   STUDENT_MODEL_PATH=/models/Qwen2.5-0.5B-Instruct TEACHER_URL=http://127.0.0.1:13141/generate \
#   DATA_PATH=/data/prompts.jsonl bash examples/on_policy_distillation/run_opd_qwen.sh
#
# The server's tokenizer must be the student's: the run reads the model path the server reports
# (set teacher.models=[{url: ..., tokenizer: DIR}] when it is not a directory on this machine).
# START_TEACHER needs SGLang and a GPU (unverified here). DATA_PATH: JSON lines (or parquet)
# with a "prompt" column.
# Environment (all optional): STUDENT_MODEL_PATH (or MODEL_PATH), TEACHER_URL, START_TEACHER,
# TEACHER_MODEL_PATH, TEACHER_GPU, TEACHER_PORT, DATA_PATH, NPROC (GPUs; 0: one smoke-sized step
# on the CPU), SAVE_PATH, WANDB_API_KEY / WANDB_PROJECT, LIGHTRFT_DRY_RUN=1 (print the
# configuration only).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"

STUDENT_MODEL_PATH=${STUDENT_MODEL_PATH:-${MODEL_PATH:-/path/to/Qwen2.5-0.5B-Instruct}}
TEACHER_MODEL_PATH=${TEACHER_MODEL_PATH:-/path/to/Qwen2.5-7B-Instruct}
DATA_PATH=${DATA_PATH:-/path/to/your/dataset.jsonl}
EXPERIMENT_NAME=${EXPERIMENT_NAME:-opd-qwen-7b-to-0.5b}
SAVE_PATH=${SAVE_PATH:-results/$EXPERIMENT_NAME/$EXPERIMENT_NAME-$STAMP}

TEACHER_PORT=${TEACHER_PORT:-13141}
if [ -z "${TEACHER_URL:-}" ] && [ "${START_TEACHER:-0}" = 1 ] && [ "${LIGHTRFT_DRY_RUN:-0}" != 1 ]; then
  LOG_FILE="/tmp/teacher_model_$STAMP.log"
  CUDA_VISIBLE_DEVICES=${TEACHER_GPU:-7} $PYTHON -m sglang.launch_server \
    --model-path "$TEACHER_MODEL_PATH" --host 127.0.0.1 --port "$TEACHER_PORT" --tp 1 \
    --chunked-prefill-size 4096 --mem-fraction-static 0.6 >"$LOG_FILE" 2>&1 &
  TEACHER_PID=$!
  trap 'kill "$TEACHER_PID" 2>/dev/null || true' EXIT
  for _ in $(seq 60); do
    if curl -sf "http://127.0.0.1:$TEACHER_PORT/health" >/dev/null 2>&1; then break; fi
    if ! kill -0 "$TEACHER_PID" 2>/dev/null; then tail -n 20 "$LOG_FILE"; exit 1; fi
    sleep 5
  done
  TEACHER_URL="http://127.0.0.1:$TEACHER_PORT/generate"
fi
# the original's --remote_rm_url (a served teacher), else the local directory
if [ -n "${TEACHER_URL:-}" ]; then
  TEACHER=(--remote_rm_url "$TEACHER_URL")
else
  TEACHER=("teacher.path=$TEACHER_MODEL_PATH")
fi

# --use_wandb without a key (as the original): W&B with the WANDB_API_KEY of the environment.
WANDB=()
if [ -n "${WANDB_API_KEY:-}" ]; then WANDB=(--use_wandb); fi

# The advantage is the teacher's log-prob minus the student's on each sampled token; the rows
# hold a prompt only, so the logged reward is one that needs no answer (the length penalty).
lightrft_train grpo \
  --pretrain "$STUDENT_MODEL_PATH" \
  data.train.reference_key=null \
  'reward.sources=[{type: length}]' \
  --save_trajectories \
  --advantage_estimator on_policy_distillation \
  --fsdp \
  --use_kl_loss \
  --flash_attn \
  --rm_use_engine \
  --reward_pretrain '{}' \
  "${TEACHER[@]}" \
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
