#!/usr/bin/env bash
# Chat with a model, as LightRFT's examples/chat/: a trained run's final_model, an exported
# checkpoint (lightrft checkpoints export RUN --out DIR) or any Hugging Face directory.
#
#   MODEL=runs/grpo-gsm8k/final_model bash examples/chat/chat.sh
#       default MODEL: the embedded SmolLM2-135M-Instruct. Type a message per line;
#       /reset forgets the conversation, /exit (or Ctrl-D) ends. Input may be piped.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"
MODEL_OPT=()
if [ -n "${MODEL:-}" ]; then MODEL_OPT=(--model "$MODEL"); fi
$LIGHTRFT chat "${MODEL_OPT[@]}" "$@"
