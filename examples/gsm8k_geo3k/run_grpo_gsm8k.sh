#!/usr/bin/env bash
# GRPO on GSM8K with a rule-based math reward, as LightRFT's
# examples/gsm8k_geo3k/run_grpo_gsm8k_qwen2.5_0.5b.sh (same flags where they exist here).
#
#   bash examples/gsm8k_geo3k/run_grpo_gsm8k.sh
#       GPUs: every GPU of this node, FSDP2, bf16, the original's batch sizes (global).
#       CPU: a 2-step run of the same job at smoke size.
#   MODEL=/models/Qwen2.5-0.5B-Instruct DATA=/data/gsm8k/train.jsonl bash examples/...
#       DATA: GSM8K rows ({"question": ..., "answer": "... #### 42"}); default: the 16
#       GSM8K-style rows in examples/data/gsm8k_sample.jsonl. MODEL: default the embedded
#       SmolLM2-135M-Instruct. Extra arguments are passed on (key=value or flags).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"
DATA=${DATA:-$HERE/../data/gsm8k_sample.jsonl}
RUN_DIR=${RUN_DIR:-runs/grpo-gsm8k}

if [ "$GPUS" -gt 0 ]; then
  SCALE=(--nproc-per-node "$GPUS" --fsdp --bf16 --flash_attn --gradient_checkpointing
         --rollout_batch_size 128 --train_batch_size 128 --n_samples_per_prompt 5
         --micro_train_batch_size 4 --micro_rollout_batch_size 4
         --prompt_max_len 1024 --generate_max_len 2048 train.total_steps=150
         --save_steps 20 --max_ckpt_num 3)
else
  SCALE=(--rollout_batch_size 2 --train_batch_size 4 --n_samples_per_prompt 2
         --micro_train_batch_size 2 --generate_max_len 16 train.total_steps=2
         logging.progress=false)
fi

$LIGHTRFT train grpo "${MODEL_ARGS[@]}" \
  --prompt_data "$DATA" data.train.preprocessor=gsm8k data.eval=null \
  --advantage_estimator group_norm --actor_learning_rate 1e-6 \
  --init_kl_coef 0.01 --kl_estimator k3 --max_epochs 1 \
  --save_path "$RUN_DIR" --overwrite \
  "${SCALE[@]}" "$@"
