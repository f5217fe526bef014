#!/usr/bin/env bash
# Accuracy of a model on math benchmarks, the counterpart of the original LightRFT's
# math_benchmarks/run_eval.sh (same arguments and environment).
#
#   DATA_ROOT=/data/eval_data bash examples/math_benchmarks/run_eval.sh MODEL_PATH [BENCHMARK ...]
#       BENCHMARK: DATA_ROOT/<name>.json (.jsonl) or DATA_ROOT/eval_data/<name>.json, in the
#       original's layout ({"prompt": [{"from", "value"}], "final_answer", "choices"})
#       (default: math500 aime2024 gpqa_diamond)
#       MAX_TOKENS (8192), TEMPERATURE (0.0: greedy), TOP_P (0.95), BATCH_SIZE (1),
#       OUTPUT_DIR (./eval_results: eval.json there), USE_VLLM=1 (rollout.engine=vllm) with
#       VLLM_TENSOR_PARALLEL_SIZE (1)
# Runs `lightrft eval --benchmarks NAME ...`: open answers graded as math answers, GPQA's
# multiple choice by the chosen letter.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"
MODEL_PATH=${1:-${MODEL_PATH:-}}
if [ $# -gt 0 ]; then shift; fi
if [ -z "$MODEL_PATH" ]; then
  echo "usage: bash run_eval.sh MODEL_PATH [BENCHMARK ...] (or set MODEL_PATH)" >&2
  exit 2
fi
read -r -a BENCHMARKS <<< "${*:-${BENCHMARKS:-math500 aime2024 gpqa_diamond}}"
DATA_ROOT=${DATA_ROOT:-/path/to/eval_data}
OUTPUT_DIR=${OUTPUT_DIR:-./eval_results}
VLLM=()
if [ "${USE_VLLM:-0}" = 1 ]; then
  VLLM=(--use-vllm --vllm-tensor-parallel-size "${VLLM_TENSOR_PARALLEL_SIZE:-1}")
fi
[ "${LIGHTRFT_DRY_RUN:-0}" = 1 ] || mkdir -p "$OUTPUT_DIR"
lightrft_run eval --model "$MODEL_PATH" --benchmarks "${BENCHMARKS[@]}" --data-root "$DATA_ROOT" \
  --max-new-tokens "${MAX_TOKENS:-8192}" --temperature "${TEMPERATURE:-0.0}" \
  --top-p "${TOP_P:-0.95}" --batch-size "${BATCH_SIZE:-1}" --output-dir "$OUTPUT_DIR" "${VLLM[@]}"
