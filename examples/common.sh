# Sourced by the example scripts. Reads (all optional):
#   LIGHTRFT          the command (default: lightrft; the tests use "python -m lightrft.entrypoints.cli")
#   PYTHON            the interpreter of the helper scripts (default: python)
#   NPROC             processes on this node, one per GPU (default: every CUDA GPU; 0 without one)
#   LIGHTRFT_DRY_RUN  1: print the configuration the flags resolve to (`lightrft config show`)
#                     and exit, instead of training
# Defines:
#   ON_CPU            1 when NPROC is 0: the scripts then run a smoke-sized job (SMOKE below)
#   SMOKE             the smoke-size flags and overrides, given after the script's own ones (the
#                     last value of a flag wins; an override wins over a flag)
#   CPU_ARGS          SMOKE on a CPU, else nothing
#   STAMP             the launch time (run names)
#   BOXED_SYSTEM_PROMPT  the system prompt of the <think> ... \boxed{} rule rewards
#   lightrft_train ALGORITHM ARGS...   `lightrft train` (or `config show` on a dry run)
#   lightrft_run ARGS...               another lightrft command (printed on a dry run)
LIGHTRFT=${LIGHTRFT:-lightrft}
PYTHON=${PYTHON:-python}
if [ -z "${NPROC:-}" ]; then
  NPROC=$($PYTHON -c 'import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)')
fi
ON_CPU=0
if [ "$NPROC" -eq 0 ]; then ON_CPU=1; fi

# STEPS (default 1) steps of 2 prompts x 2 samples of at most 8 tokens (train.episodes=null:
# the step count is not derived from the dataset's size), no engine, evaluation on 2 prompts.
SMOKE=(--rollout_batch_size 2 --train_batch_size 4 --n_samples_per_prompt 2
       --micro_train_batch_size 2 --micro_rollout_batch_size 2 --generate_max_len 8
       --max_eval_samples 2 'rollout.engine={type: hf}' train.episodes=null
       "train.total_steps=${STEPS:-1}" logging.progress=false)

CPU_ARGS=()
if [ "$ON_CPU" = 1 ]; then CPU_ARGS=("${SMOKE[@]}"); fi
STAMP=$(date +%Y%m%d_%H%M%S)
BOXED_SYSTEM_PROMPT='The user asks a question and the assistant answers it. The assistant first reasons it through privately, checking its own steps, then gives its final analysis. The reasoning goes inside <think></think>, followed by the final thought with the answer in \boxed{}, in this shape: <think> reasoning </think> final thought and \boxed{answer}.'

lightrft_train() {
  local algorithm=$1
  shift
  if [ "${LIGHTRFT_DRY_RUN:-0}" = 1 ]; then
    $LIGHTRFT config show "$algorithm" "$@"
  elif [ "$NPROC" -gt 1 ]; then
    $LIGHTRFT train "$algorithm" --nproc-per-node "$NPROC" "$@"
  else
    $LIGHTRFT train "$algorithm" "$@"
  fi
}

# lightrft_run ARGS...: `$LIGHTRFT ARGS...` (the commands other than train); on a dry run the
# command line is printed (one shell-quoted line) instead.
lightrft_run() {
  if [ "${LIGHTRFT_DRY_RUN:-0}" = 1 ]; then
    printf '%q ' $LIGHTRFT "$@"
    echo
  else
    $LIGHTRFT "$@"
  fi
}
