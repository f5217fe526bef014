#!/usr/bin/env bash
# A scalar reward model on a vision-language backbone (Qwen2-VL / Qwen2.5-VL) from image
# preference pairs, the counterpart of the original LightRFT's srm_training/run_srm_vl.sh
# (what is translated and what is left out: scalar_rm.sh).
#
#   MODEL_PATH=/models/Qwen2.5-VL-3B-Instruct DATA_PATH=/data/pairs.jsonl bash examples/srm_training/run_srm_vl.sh
#       DATA_PATH: JSON lines {"prompt", "chosen", "rejected", "images"}; EVAL_DATA_PATH: the
#       same, held out; SAVE_PATH: output; NPROC=0: a smoke run of the score head on the CPU.
#   Then use it as a reward: lightrft train grpo 'reward.sources=[{type: scalar_rm, path: SAVE_PATH/model}]'
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"
MODALITY=vision-language
MEDIA_KEY=(--images-key "${IMAGES_KEY:-images}")
RM_ARGS=("$@")
source "$HERE/scalar_rm.sh"
