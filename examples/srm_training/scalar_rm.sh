# Sourced by run_srm_vl.sh and run_srm_al.sh: a scalar (Bradley-Terry) reward model trained
# with `lightrft rm train --kind scalar`, from the original's reward-model trainer settings.
#
# The original's flags, translated to `lightrft rm train`'s own:
#   --pretrain -> --model; --save_path/--ckpt_path -> --output; --train_batch_size -> --batch-size;
#   --micro_train_batch_size -> --micro-batch-size; --max_epochs -> --epochs;
#   --prompt_max_len -> --max-length; --bf16 -> --dtype bf16; --actor_learning_rate -> --lr;
#   --train_data / --eval_data -> --data / --eval-data (one preference file each: prompt,
#   chosen, rejected, and the media column); --eval_steps -> --eval-every;
#   --save_steps -> --checkpoint-every; --margin -> --margin; --zero_stage 3 -> --strategy.
# Also read by `lightrft rm train` (pass them in RM_ARGS): --loss-type hps / logexp,
# --pooling attn / mean, --heads and --head-arch, --probing-layer, --scale-for-train,
# --task-instruction, the named data sets of --data (hpdv3:, rapidata-t2v:, audio-alpaca:, ...,
# including pairs whose responses are images, audio or videos), video rows (--fps,
# --max-frames), --max-pixels. `lightrft rm train` also accepts the original's own flags as
# written (docs/migrating.md). Not read: --gradient_checkpointing, --flash_attn, --max_ckpt_num.
#
# Reads MODEL_PATH, DATA_PATH (default: the built-in synthetic pairs, text only), EVAL_DATA_PATH,
# SAVE_PATH, MODALITY (text, vision-language or audio-language), MEDIA_KEY (the pairs' media
# column), and the caller's RM_ARGS.
set -euo pipefail
EXPERIMENT_NAME=${EXPERIMENT_NAME:-lightrft-srm-$MODALITY}
SAVE_PATH=${SAVE_PATH:-results/$EXPERIMENT_NAME/$EXPERIMENT_NAME-$(date +%m%d%H%M)}
ARGS=(--kind scalar --modality "$MODALITY" --output "$SAVE_PATH" --data "${DATA_PATH:-synthetic}")
if [ -n "${MODEL_PATH:-}" ]; then ARGS+=(--model "$MODEL_PATH"); fi
if [ -n "${EVAL_DATA_PATH:-}" ]; then ARGS+=(--eval-data "$EVAL_DATA_PATH"); fi
ARGS+=("${MEDIA_KEY[@]}")

if [ "$ON_CPU" = 1 ]; then
  # a smoke run: the score head only, one epoch over 64 pairs
  SCALE=(--head-only --lr 2e-3 --epochs 1 --num-synthetic 64 --max-length 128)
else
  SCALE=(--batch-size 32 --micro-batch-size 4 --epochs 5 --max-length 8196 --dtype bf16
         --lr 1e-5 --eval-every 500 --checkpoint-every 100 --margin 0.1 --strategy fsdp2)
fi
lightrft_run rm train "${ARGS[@]}" "${SCALE[@]}" "${RM_ARGS[@]}"
