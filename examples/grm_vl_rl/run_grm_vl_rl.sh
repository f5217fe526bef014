#!/usr/bin/env bash
# GRPO of a vision-language judge (RL with verifiable rewards on preference pairs), the
# counterpart of the original LightRFT's grm_vl_rl/run_grm_vl_rl.sh, with its flags.
#
#   MODEL_PATH=/models/Qwen2.5-VL-7B-Instruct DATA_PATH=/data/HPDv3/train.json bash examples/grm_vl_rl/run_grm_vl_rl.sh
#
# The pairs of DATA_NAME:DATA_PATH (a reward data set of docs/reward-models.md, image or
# text responses) become pairwise judge prompts (data.train.preprocessor=judge_pairs: both
# responses shown, their images in place), and the judge_agreement reward scores the
# judge's [[A]] / [[B]] verdict against the human preference plus a <think> block before it
# (the original's accuracy + format). docs/reward-models.md, "Judges trained by RL".
#
# GPU-ONLY AND UNVERIFIED at this size (the same path runs on a tiny model in
# tests/e2e/test_judge_rl.py); what differs from the original:
# - the original's rows are video pairs (rapidata image-to-video); video pairs are refused
#   (video input is other work; --fps and --limit_mm_video_per_prompt change nothing), so
#   DATA_NAME defaults to hpdv3, image pairs;
# - the verdict is [[A]] / [[B]] (the label parser of generative_rm), not the original's
#   <answer>Image 1 is better</answer>;
# - --system_prompt_path examples/grm_vl_rl/system_prompts.yaml (one system prompt per task
#   type) is left out: one system prompt serves every row here (SYSTEM_PROMPT below).
# Environment (all optional): MODEL_PATH, DATA_PATH, DATA_NAME (the source's name in the
# original's name:path list), SYSTEM_PROMPT, NPROC, SAVE_PATH, WANDB_API_KEY / WANDB_PROJECT,
# LIGHTRFT_DRY_RUN=1 (print the configuration only).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"

MODEL_PATH=${MODEL_PATH:-/path/to/Qwen2.5-VL-7B-Instruct}
DATA_PATH=${DATA_PATH:-/path/to/HPDv3/train.json}
EXPERIMENT_NAME=${EXPERIMENT_NAME:-LightRFT-GRM-VL-GRPO}
SAVE_PATH=${SAVE_PATH:-results/$EXPERIMENT_NAME/$EXPERIMENT_NAME-$STAMP}
SYSTEM_PROMPT=${SYSTEM_PROMPT:-'You compare two generated results for the same request. Reason inside <think></think>, then give your verdict: [[A]] if the first is better, [[B]] if the second is.'}

lightrft_train grpo \
  --pretrain "$MODEL_PATH" \
  model.modality=vision-language \
  data.train.preprocessor=judge_pairs \
  'reward.sources=[{type: judge_agreement}]' \
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
  --prompt_data "${DATA_NAME:-hpdv3}:$DATA_PATH" \
  --flash_attn \
  --gradient_checkpointing \
  --save_steps 20 \
  --max_ckpt_num 5 \
  --engine_mem_util 0.8 \
  --engine_tp_size "${ENGINE_TP:-1}" \
  --enable_engine_sleep \
  --system_prompt "$SYSTEM_PROMPT" \
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
