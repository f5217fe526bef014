#!/usr/bin/env bash
# GRPO on Geo3K-style image rows with a vision-language model, as LightRFT's
# examples/gsm8k_geo3k/run_grpo_geo3k_qwen2.5_vl_7b.sh.
#
#   MODEL=/models/Qwen2.5-VL-7B-Instruct bash examples/gsm8k_geo3k/run_grpo_geo3k_vl.sh
#       GPUs: every GPU of this node, FSDP2, bf16, the original's batch sizes (global).
#       CPU: a 2-step run at smoke size (MODEL=a tiny Qwen2-VL directory).
#   DATA=DIR: a directory with train.jsonl ({"prompt", "images", "reference"}, image paths
#       relative to it); default: 16 drawn triangles (make_geo3k_rows.py) in RUN_DIR/data.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"
if [ -z "${MODEL:-}" ]; then
  echo "set MODEL to a Qwen2-VL / Qwen2.5-VL directory (there is no embedded vision model)" >&2
  exit 2
fi
RUN_DIR=${RUN_DIR:-runs/grpo-geo3k}
if [ -z "${DATA:-}" ]; then
  DATA=$RUN_DIR-data
  $PYTHON "$HERE/make_geo3k_rows.py" "$DATA" 16
fi

if [ "$GPUS" -gt 0 ]; then
  SCALE=(--nproc-per-node "$GPUS" --fsdp --bf16 --flash_attn --gradient_checkpointing
         --rollout_batch_size 64 --train_batch_size 256 --n_samples_per_prompt 8
         --micro_train_batch_size 1 --micro_rollout_batch_size 2
         --prompt_max_len 2048 --generate_max_len 1024 train.total_steps=100
         rollout.balance_ranks=true --save_steps 20)
else
  SCALE=(--rollout_batch_size 2 --train_batch_size 4 --n_samples_per_prompt 2
         --micro_train_batch_size 2 --generate_max_len 8 train.total_steps=2
         logging.progress=false)
fi

$LIGHTRFT train grpo "${MODEL_ARGS[@]}" model.modality=vision-language \
  --prompt_data "$DATA/train.jsonl" data.train.images_key=images data.eval=null \
  'reward.sources=[{type: math}]' \
  --advantage_estimator group_norm --actor_learning_rate 1e-6 --init_kl_coef 0.01 \
  --save_path "$RUN_DIR" --overwrite \
  "${SCALE[@]}" "$@"
