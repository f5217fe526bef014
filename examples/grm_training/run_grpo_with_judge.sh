#!/usr/bin/env bash
# GRPO scored by a generative reward model (a judge writing "Score: X/10"), e.g. one trained by
# run_grm_vl.sh. Not a script of the original LightRFT: its reward models score through
# --reward_pretrain (scalar models by label); a judge is this project's reward.sources entry.
#
#   JUDGE_PATH=/models/judge DATA_PATH=/data/gsm8k_raw/train.jsonl bash examples/grm_training/run_grpo_with_judge.sh
#       JUDGE_PATH: the judge; default: the policy's own model judging its answers.
#       MODEL_PATH: the policy (default: the embedded SmolLM2-135M-Instruct).
#       DATA_PATH: raw GSM8K rows; default: examples/data/gsm8k_sample/train.jsonl.
#       SAVE_PATH: the run directory; NPROC=0: a 2-step smoke run on the CPU.
# The verdicts are parsed strictly (docs/reward-models.md); unparsable ones score 0, counted.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"
DATA_PATH=${DATA_PATH:-$HERE/../data/gsm8k_sample/train.jsonl}
SAVE_PATH=${SAVE_PATH:-runs/grpo-judge}
JUDGE=${JUDGE_PATH:-null}
MODEL=()
if [ -n "${MODEL_PATH:-}" ]; then MODEL=(--pretrain "$MODEL_PATH"); fi

if [ "$ON_CPU" = 1 ]; then
  SCALE=(--rollout_batch_size 2 --train_batch_size 4 --n_samples_per_prompt 2
         --generate_max_len 16 train.total_steps=2 logging.progress=false)
  JUDGE_TOKENS=8
else
  SCALE=(--fsdp --bf16 --rollout_batch_size 64 --train_batch_size 64 --n_samples_per_prompt 8
         --generate_max_len 512 train.total_steps=100)
  JUDGE_TOKENS=128
fi

lightrft_train grpo "${MODEL[@]}" \
  --prompt_data "$DATA_PATH" data.train.preprocessor=gsm8k data.eval=null \
  "reward.sources=[{type: generative_rm, path: $JUDGE, name: judge, verdict: score, max_score: 10, max_new_tokens: $JUDGE_TOKENS}]" \
  --actor_learning_rate 1e-6 --save_path "$SAVE_PATH" --overwrite \
  "${SCALE[@]}" "$@"
