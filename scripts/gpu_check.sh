#!/usr/bin/env bash
# The checks to run when a CUDA machine is lent (one GPU, no package index, no hub): the
# GPU-marked tests and the GPU benchmarks, each part under its own time limit, logs under
# $OUT (default /tmp/gpu_check). Nothing here is part of CI.
#
# On the machine with the index (once per session), in the repo root:
#   bash scripts/gpu_check.sh prepare   # .gpu/: config + tokenizer of the embedded model
#   + the wheels the GPU image lacks, in .whl/ (see CONTRIBUTING.md, "A GPU machine")
# On the GPU machine (carry .gpu and .whl):
#   bash scripts/gpu_check.sh run
# Timings use random weights (no model can travel): the embedded SmolLM2's tokenizer and
# architecture with Qwen2.5-0.5B's dimensions (bench/bench_scaling.py SHAPES); LightRFT's
# learning figures are CPU measurements and are not rerun here. A random model earns no
# reward, so the zero-advantage skip is turned off: every sample is trained, as in TRL.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
DEVICE=${GPU_CHECK_DEVICE:-cuda}    # cpu: a smoke run of this script on a CPU machine
SHAPE=${GPU_CHECK_SHAPE:-qwen2.5-0.5b}
THREADS=${GPU_CHECK_THREADS:-8}
DTYPE=${GPU_CHECK_DTYPE:-bf16}
PARTS=${GPU_CHECK_PARTS:-tests,cli,trl_main,async_main,trl_long,deepspeed}

if [ "$mode" = prepare ]; then
  "$PY" - <<'EOF'
import shutil
from pathlib import Path
from lightrft.adapters.hf import default_model_path
src, dst = default_model_path(), Path(".gpu/smol")
dst.mkdir(parents=True, exist_ok=True)
for f in src.iterdir():
    if not f.name.endswith(".safetensors"):
        shutil.copy(f, dst / f.name)
print("model shell in", dst)
EOF
  exit $?
fi

export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export DS_BUILD_OPS=0 LIGHTRFT_SANDBOX_TESTS=skip-missing
if [ "${GPU_CHECK_WHEELS:-1}" = 1 ] && compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
# the random-weight stand-in for the embedded model, where default_model_path() looks
export LIGHTRFT_CACHE=${LIGHTRFT_CACHE:-/tmp/gpu_check_cache}
log() { echo "[gpu_check $(date -u +%H:%M:%S)] $*" | tee -a "$OUT/summary.log"; }
part() { [[ ",$PARTS," == *",$1,"* ]]; }
ERR=/tmp/gpu_check_err; mkdir -p "$ERR"  # $OUT brings back 8 files at most
errors() {  # each side's step lines, then the end of any traceback
  grep -E "^\[(ours|trl|proto)\] |^main/|^long/" "$ERR/$1.err" >> "$OUT/summary.log"
  grep -v -i "warn" "$ERR/$1.err" | grep -B1 -A3 "lightrft/\|Error" | tail -40 >> "$OUT/summary.log"
}
reap() { pkill -9 -f "bench/bench_(vs_trl|async)" 2>/dev/null; sleep 1; }  # timeout spares children

log "start; device $DEVICE, shape $SHAPE, dtype $DTYPE, parts $PARTS"
{ nvidia-smi -L; "$PY" -c "import torch, transformers, peft; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-', 'transformers', transformers.__version__, 'peft', peft.__version__)"; } 2>&1 | tee -a "$OUT/summary.log"
timeout 120 "$PY" - "$SHAPE" /tmp/gpu_check_model_path <<'EOF'
import os, shutil, sys
from pathlib import Path
import torch
from transformers import AutoConfig, AutoModelForCausalLM
target = Path(os.environ["LIGHTRFT_CACHE"]) / "models" / "smollm2-135m-instruct"
if not (target / "config.json").is_file():
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(".gpu/smol")).save_pretrained(target)
    for f in Path(".gpu/smol").iterdir():
        if not (target / f.name).exists():
            shutil.copy(f, target / f.name)
sys.path.insert(0, "bench")
import bench_scaling
Path(sys.argv[2]).write_text(str(bench_scaling.random_model(sys.argv[1])))
EOF
MODEL=$(cat /tmp/gpu_check_model_path 2>/dev/null)
[ -n "$MODEL" ] || { log "could not build the random model"; exit 1; }
log "random $SHAPE model in $MODEL"

if part tests; then
  log "part tests: pytest -m gpu (DeepSpeed's separately)"
  timeout 120 "$PY" -m pytest -m gpu tests -q -p no:cacheprovider -rA \
    --ignore=tests/unit/adapters/deepspeed/test_deepspeed_gpu.py --ignore=tests/architecture 2>&1 | tail -60 > "$OUT/tests.log"
  log "tests exit ${PIPESTATUS[0]}: $(grep -E '^[0-9]+ (passed|failed)|passed|failed' "$OUT/tests.log" | tail -1)"
fi

if part cli; then  # the main job's CLI on the GPU: 4 steps, a checkpoint at 2, resumed to 5
  log "part cli: lightrft train grpo (the demo recipe) on $DEVICE, then --resume"
  run=/tmp/gpu_check_run; rm -rf "$run"
  common=(model.path="$MODEL" backend.accelerator="$DEVICE" model.dtype="$DTYPE"
    logging.run_dir="$run" checkpoint.every=2 eval.every=4 eval.max_prompts=16
    train.skip_zero_advantage_rows=false logging.progress=false)
  { timeout 60 "$PY" -m lightrft.entrypoints.cli demo "${common[@]}" train.total_steps=4 &&
    timeout 45 "$PY" -m lightrft.entrypoints.cli train grpo --resume --config "$run/config.yaml" \
      "${common[@]}" logging.overwrite=false train.total_steps=5 &&
    "$PY" -m lightrft.entrypoints.cli checkpoints verify "$run"; } > "$OUT/cli.log" 2>&1
  log "cli exit $?: $(tail -3 "$OUT/cli.log" | tr '\n' ' ')"
fi

vs_trl() {  # name, extra bench_vs_trl arguments
  local name=$1; shift
  log "part $name: bench_vs_trl $*"
  timeout "${LIMIT:-120}" "$PY" bench/bench_vs_trl.py --device "$DEVICE" --dtype "$DTYPE" \
    --model "$MODEL" --threads "$THREADS" --fixed-length --warmup 1 --steps 2 \
    --set train.skip_zero_advantage_rows=false "$@" > "$OUT/$name.md" 2> "$ERR/$name.err"
  log "$name exit $?"; reap; cat "$OUT/$name.md" >> "$OUT/summary.log"; errors "$name"
}
part trl_main && LIMIT=110 vs_trl trl_main --workload main-job

if part async_main; then
  log "part async_main: bench_async sync / one_step_off / one_step_off_split"
  timeout 130 "$PY" bench/bench_async.py --workloads main --steps 5 --threads "$THREADS" \
    --modes sync,one_step_off,one_step_off_split --json \
    model.path="$MODEL" backend.accelerator="$DEVICE" model.dtype="$DTYPE" train.skip_zero_advantage_rows=false \
    > "$OUT/async_main.json" 2> "$ERR/async_main.err"
  log "async_main exit $?"; reap; cat "$OUT/async_main.json" >> "$OUT/summary.log"; errors async_main
fi

part trl_long && LIMIT=60 vs_trl trl_long --workload main-job --max-new-tokens 256 --prompts 4

if part deepspeed; then
  log "part deepspeed: the DeepSpeed GPU tests"
  timeout 80 "$PY" -m pytest tests/unit/adapters/deepspeed/test_deepspeed_gpu.py -q \
    -p no:cacheprovider -rA 2>&1 | tail -40 > "$OUT/deepspeed.log"
  log "deepspeed exit ${PIPESTATUS[0]}: $(tail -1 "$OUT/deepspeed.log")"
fi
log "done"
