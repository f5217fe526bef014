#!/usr/bin/env bash
# GRPO scored by a generative reward model (a judge that writes "Score: X/10"), as
# LightRFT's examples/grm_vl_rl/ (a GRM as the RL reward).
#
#   JUDGE=/models/judge bash examples/grm/run_grpo_with_judge.sh
#       JUDGE: the judge model directory; default: the policy's own model (MODEL, else the
#       embedded SmolLM2-135M-Instruct) judging its answers. The verdicts are parsed
#       strictly (docs/reward-models.md); unparsable ones score 0 and are counted.
#   DATA: GSM8K rows; default examples/data/gsm8k_sample.jsonl.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../common.sh"
DATA=${DATA:-$HERE/../data/gsm8k_sample.jsonl}
RUN_DIR=${RUN_DIR:-runs/grpo-judge}
JUDGE_PATH=${JUDGE:-null}

if [ "$GPUS" -gt 0 ]; then
  SCALE=(--nproc-per-node "$GPUS" --fsdp --bf16 --rollout_batch_size 64
         --train_batch_size 64 --n_samples_per_prompt 8 --generate_max_len 512
         train.total_steps=100)
  JUDGE_TOKENS=128
else
  SCALE=(--rollout_batch_size 2 --train_batch_size 4 --n_samples_per_prompt 2
         --generate_max_len 16 train.total_steps=2 logging.progress=false)
  JUDGE_TOKENS=8
fi

$LIGHTRFT train grpo "${MODEL_ARGS[@]}" \
  --prompt_data "$DATA" data.train.preprocessor=gsm8k data.eval=null \
  "reward.sources=[{type: generative_rm, path: $JUDGE_PATH, name: judge, verdict: score, max_score: 10, max_new_tokens: $JUDGE_TOKENS}]" \
  --actor_learning_rate 1e-6 --save_path "$RUN_DIR" --overwrite \
  "${SCALE[@]}" "$@"
