#!/usr/bin/env bash
# GRPO of Qwen2-Audio on AVQA (R1-AQA) with the rule reward avqa_rule (the <answer> option
# matches, and the format), the counterpart of the original LightRFT's script of the same name,
# with its flags.
#
#   python examples/r1_aqa/data_preprocess/avqa.py --input_jsonl AVQA/train_r1aqa_line.json --audio_dir AVQA/all_audios --local_save_dir /data/avqa
#   MODEL_PATH=/models/Qwen2-Audio-7B-Instruct DATA_PATH=/data/avqa bash examples/r1_aqa/run_grpo_r1_aqa_qwen2_audio_7b.sh
#
# Environment (all optional): MODEL_PATH (a Qwen2-Audio directory), DATA_PATH (the preprocessed
# directory), NPROC (GPUs, the original uses 1; 0: one smoke-sized step on the CPU), SAVE_PATH,
# WANDB_API_KEY / WANDB_PROJECT, LIGHTRFT_DRY_RUN=1 (print the configuration only).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"

MODEL_PATH=${MODEL_PATH:-/path/to/Qwen2-Audio-7B-Instruct}
DATA_PATH=${DATA_PATH:-/path/to/preprocessed/avqa}
EXPERIMENT_NAME=${EXPERIMENT_NAME:-lightrft-r1-aqa-grpo-training}
SAVE_PATH=${SAVE_PATH:-results/$EXPERIMENT_NAME/$EXPERIMENT_NAME-$STAMP}

# model.modality=audio-language: the original's R1-AQA trainer builds an audio-language
# model; here it is said explicitly.
lightrft_train grpo \
  --pretrain "$MODEL_PATH" \
  model.modality=audio-language \
  --save_trajectories \
  --advantage_estimator group_norm \
  --fsdp \
  --use_kl_loss \
  --flash_attn \
  --rm_use_engine \
  --reward_pretrain '{}' \
  --save_path "$SAVE_PATH" \
  --ckpt_path "$SAVE_PATH" \
  --micro_train_batch_size 1 \
  --train_batch_size 16 \
  --micro_rollout_batch_size 1 \
  --rollout_batch_size 4 \
  --max_epochs 1 \
  --num_episodes 10 \
  --lr_warmup_ratio 0.03 \
  --n_samples_per_prompt 4 \
  --prompt_max_len 512 \
  --generate_max_len 1024 \
  --zero_stage 3 \
  --bf16 \
  --actor_learning_rate 1e-6 \
  --init_kl_coef 0.01 \
  --kl_estimator k3 \
  --temperature 1.0 \
  --prompt_data "$DATA_PATH" \
  --input_key prompt \
  --label_key label \
  --reference_key reference \
  --eval_steps 50 \
  --gradient_checkpointing \
  --save_steps 50 \
  --max_ckpt_num 3 \
  --engine_type vllm \
  --engine_mem_util 0.3 \
  --engine_tp_size 1 \
  --enable_engine_sleep \
  --l2 1.0e-2 \
  --adam_offload \
  --use_wandb "${WANDB_API_KEY:-}" \
  --wandb_project "${WANDB_PROJECT:-LightRFT-R1-AQA}" \
  --wandb_run_name "$EXPERIMENT_NAME-$STAMP" \
  "${CPU_ARGS[@]}" "$@"
