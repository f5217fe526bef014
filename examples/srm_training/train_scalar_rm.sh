#!/usr/bin/env bash
# A scalar (Bradley-Terry) reward model from preference pairs, as LightRFT's
# examples/srm_training/ (there for vision/audio models; here for the text models).
#
#   bash examples/srm_training/train_scalar_rm.sh
#       DATA: preference pairs jsonl ({"prompt", "chosen", "rejected"}); default: the
#       built-in synthetic pairs. MODEL: default the embedded SmolLM2-135M-Instruct.
#       GPUs: bf16, the whole model trained; CPU: the value head only, 1 epoch.
#   Then: lightrft rm eval --model RUN_DIR/model --data PAIRS, or use it as a reward:
#       lightrft train grpo 'reward.sources=[{type: scalar_rm, path: RUN_DIR/model}]'
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"
RUN_DIR=${RUN_DIR:-runs/scalar-rm}
MODEL_OPT=()
if [ -n "${MODEL:-}" ]; then MODEL_OPT=(--model "$MODEL"); fi

if [ "$GPUS" -gt 0 ]; then
  SCALE=(--dtype bf16 --epochs 2)
else
  SCALE=(--head-only --lr 2e-3 --epochs 1 --num-synthetic 64 --max-length 128)
fi

$LIGHTRFT rm train --output "$RUN_DIR" --overwrite "${MODEL_OPT[@]}" \
  --data "${DATA:-synthetic}" "${SCALE[@]}" "$@"
