#!/usr/bin/env bash
# Chat with a model (a run's final_model, an exported checkpoint, any Hugging Face directory),
# the counterpart of the original LightRFT's chat/chat.sh and its modes.
#
#   MODEL_PATH=runs/grpo-gsm8k/final_model bash examples/chat/chat.sh [MODE] [lightrft chat flags]
#     interactive, -i   type a message a line; /reset forgets, /exit or Ctrl-D ends (default)
#     greedy, -g        the same with greedy decoding (--temperature 0)
#     creative, -c      the same with sampling at temperature 1.0, top-p 0.9
#     batch, -b FILE [OUT]  answering a JSON list of {"query", "images", "expected"}, each
#                       alone; the results go to OUT (default results.json)
#     help, -h
# MODEL_PATH: default the embedded SmolLM2-135M-Instruct. Input may be piped. A
# vision-language model takes images (--image FILE, /image PATH, a batch item's "images").
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"
MODEL=()
if [ -n "${MODEL_PATH:-}" ]; then MODEL=(--model "$MODEL_PATH"); fi
MODE=${1:-interactive}
if [ $# -gt 0 ]; then shift; fi
case "$MODE" in
  interactive | -i) lightrft_run chat "${MODEL[@]}" "$@" ;;
  greedy | -g) lightrft_run chat "${MODEL[@]}" --temperature 0 "$@" ;;
  creative | -c) lightrft_run chat "${MODEL[@]}" --temperature 1.0 --top-p 0.9 "$@" ;;
  batch | -b)
    if [ $# -lt 1 ]; then
      echo "usage: chat.sh batch FILE [OUTPUT_FILE]" >&2
      exit 2
    fi
    BATCH_FILE=$1
    OUTPUT_FILE=${2:-results.json}
    shift $(($# < 2 ? $# : 2))
    lightrft_run chat "${MODEL[@]}" --batch "$BATCH_FILE" --output "$OUTPUT_FILE" "$@"
    ;;
  help | -h | --help) sed -n '2,13p' "$0" | cut -c3- ;;
  *)
    echo "chat.sh: unknown mode '$MODE' (interactive, greedy, creative, batch, help)" >&2
    exit 2
    ;;
esac
