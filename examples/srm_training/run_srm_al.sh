#!/usr/bin/env bash
# A scalar reward model on an audio-language backbone (Qwen2-Audio) from audio preference
# pairs, the counterpart of the original LightRFT's srm_training/run_srm_al.sh (what is
# translated and what is left out: scalar_rm.sh). MODALITY=text trains a text reward model
# on the same command (default data: the built-in synthetic pairs).
#
#   MODEL_PATH=/models/Qwen2-Audio-7B-Instruct DATA_PATH=/data/pairs.jsonl bash examples/srm_training/run_srm_al.sh
#       DATA_PATH: JSON lines {"prompt", "chosen", "rejected", "audios"}; EVAL_DATA_PATH,
#       SAVE_PATH, NPROC=0: a smoke run of the score head on the CPU.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"
MODALITY=${MODALITY:-audio-language}
MEDIA_KEY=()
if [ "$MODALITY" = audio-language ]; then MEDIA_KEY=(--audios-key "${AUDIOS_KEY:-audios}"); fi
RM_ARGS=("$@")
source "$HERE/scalar_rm.sh"
