#!/usr/bin/env bash
# A generative reward model (a judge that writes its reasoning and a verdict), trained by SFT
# on judgements, the counterpart of the original LightRFT's grm_training/run_grm_vl.sh.
#
#   MODEL_PATH=/models/Qwen2.5-VL-7B-Instruct DATA_PATH=/data/judgements.jsonl bash examples/grm_training/run_grm_vl.sh
#       DATA_PATH: JSON lines {"prompt", "response", "judgement" (reasoning + "Score: X"),
#       "images"?}; EVAL_DATA_PATH: held out; SAVE_PATH: output; MODALITY (default
#       vision-language; text for a text judge); NPROC=0: a smoke run on the CPU.
#   Then score a policy with it: run_grpo_with_judge.sh (JUDGE_PATH=SAVE_PATH/model).
#
# The original's flags, translated: --pretrain -> --model, --save_path -> --output,
# --train_batch_size -> --batch-size, --micro_train_batch_size -> --micro-batch-size,
# --max_epochs -> --epochs, --prompt_max_len -> --max-length, --generate_max_len ->
# --max-new-tokens, --bf16 -> --dtype bf16, --actor_learning_rate -> --lr, --eval_steps ->
# --eval-every, --save_steps -> --checkpoint-every, --task_instruction -> --template (the judge
# prompt, with {prompt} and {response}). Left out, not built here (the reward-model issue adds
# them): the named dataset loaders of --train_data (imagegen-cot-reward-5k:, hpdv3:, ...), video
# rows (--fps), --max_pixels, --lr_warmup_ratio, --l2, --gradient_checkpointing, --flash_attn,
# --max_ckpt_num, --use_tensorboard / --use_wandb. It trains in one process.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"
MODALITY=${MODALITY:-vision-language}
EXPERIMENT_NAME=${EXPERIMENT_NAME:-lightrft-grm-vl-training}
SAVE_PATH=${SAVE_PATH:-results/$EXPERIMENT_NAME/$EXPERIMENT_NAME-$(date +%m%d%H%M)}
TASK_INSTRUCTION=${TASK_INSTRUCTION:-'Judge how well the response answers the request.
Request: {prompt}
Response: {response}
Explain your judgement, then end with "Score: X" (X from 0 to 10).'}
ARGS=(--kind generative --verdict score --max-score 10 --modality "$MODALITY"
      --output "$SAVE_PATH" --template "$TASK_INSTRUCTION")
if [ -n "${MODEL_PATH:-}" ]; then ARGS+=(--model "$MODEL_PATH"); fi
if [ -n "${DATA_PATH:-}" ]; then ARGS+=(--data "$DATA_PATH"); fi
if [ -n "${EVAL_DATA_PATH:-}" ]; then ARGS+=(--eval-data "$EVAL_DATA_PATH"); fi
if [ "$MODALITY" = vision-language ]; then ARGS+=(--images-key "${IMAGES_KEY:-images}"); fi

if [ "$ON_CPU" = 1 ]; then
  SCALE=(--epochs 1 --batch-size 4 --micro-batch-size 2 --max-length 256 --max-new-tokens 8)
else
  SCALE=(--batch-size 8 --micro-batch-size 4 --epochs 5 --max-length 8196 --max-new-tokens 512
         --dtype bf16 --lr 1e-5 --eval-every 500 --checkpoint-every 500 --strategy fsdp2)
fi
lightrft_run rm train "${ARGS[@]}" "${SCALE[@]}" "$@"
