#!/usr/bin/env bash
# Accuracy of a model on math benchmarks, the counterpart of the original LightRFT's
# math_benchmarks/run_eval.sh (same arguments and environment).
#
#   DATA_ROOT=/data/eval_data bash examples/math_benchmarks/run_eval.sh MODEL_PATH [BENCHMARK ...]
#       BENCHMARK: a file DATA_ROOT/<name>.json or .jsonl (default: math500 aime2024 gpqa_diamond)
#       MAX_TOKENS (8192), TEMPERATURE (0.0: greedy), TOP_P (0.95), BATCH_SIZE (1),
#       OUTPUT_DIR (./eval_results: eval.json there)
# Runs `lightrft eval --data FILE ...`, which grades GSM8K-style (#### answer), MATH-style
# (\boxed{} answer) and Geo3K files. Not built here: the original's benchmark JSON layout
# ({"prompt": [{"from", "value"}], "final_answer"}) and multiple-choice grading (GPQA-Diamond);
# USE_VLLM / VLLM_TENSOR_PARALLEL_SIZE (evaluation generates with Hugging Face here).
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
FILES=()
for name in "${BENCHMARKS[@]}"; do
  for candidate in "$DATA_ROOT/$name.json" "$DATA_ROOT/$name.jsonl" "$DATA_ROOT/$name"; do
    if [ -e "$candidate" ]; then FILES+=("$candidate"); continue 2; fi
  done
  FILES+=("$DATA_ROOT/$name.json")  # absent: lightrft eval names it
done
if [ "${USE_VLLM:-0}" = 1 ]; then
  echo "run_eval.sh: USE_VLLM is not built here; evaluating with Hugging Face generation" >&2
fi
[ "${LIGHTRFT_DRY_RUN:-0}" = 1 ] || mkdir -p "$OUTPUT_DIR"
lightrft_run eval --model "$MODEL_PATH" --data "${FILES[@]}" \
  --max-new-tokens "${MAX_TOKENS:-8192}" --temperature "${TEMPERATURE:-0.0}" \
  --top-p "${TOP_P:-0.95}" --batch-size "${BATCH_SIZE:-1}" --output "$OUTPUT_DIR/eval.json"
