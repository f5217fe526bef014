# Sourced by the example scripts. Sets:
#   LIGHTRFT   the command (default: lightrft; the tests use "python -m lightrft.entrypoints.cli")
#   GPUS       CUDA GPUs on this node (0: a CPU smoke-sized run)
#   MODEL_ARGS --pretrain "$MODEL" when MODEL is set, else nothing (the embedded
#              SmolLM2-135M-Instruct)
LIGHTRFT=${LIGHTRFT:-lightrft}
PYTHON=${PYTHON:-python}
GPUS=$($PYTHON -c 'import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)')
MODEL_ARGS=()
if [ -n "${MODEL:-}" ]; then MODEL_ARGS=(--pretrain "$MODEL"); fi
