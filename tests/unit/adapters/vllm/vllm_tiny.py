"""A tiny random Llama that vLLM's CPU backend can run (head_dim 32, fp32), and one shared
in-process engine per test process (vLLM starts in seconds, not milliseconds).

Tests that need the real engine call :func:`shared_engine`, which skips them (with the
reason) when vLLM is not importable. The engine is closed when the test module that started
it ends (:func:`close_shared_engine`, from an autouse fixture of ``tests/conftest.py``), so
no vLLM process group outlives the module: later tests build and destroy their own groups.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from tests.unit.adapters.hf.hf_tiny import tiny_config, tiny_tokenizer

_ENGINE: dict[str, object] = {}


def tiny_vllm_config() -> LlamaConfig:
    """The HF tests' tiny Llama widened to 2 heads of size 32 (the smallest head vLLM's CPU
    attention takes) and 256 positions."""
    config = tiny_config()
    config.hidden_size, config.head_dim, config.intermediate_size = 64, 32, 128
    config.max_position_embeddings = 256
    return config


def tiny_vllm_model(seed: int = 0) -> LlamaForCausalLM:
    """A random fp32 model, deterministic given ``seed``, in eval mode."""
    torch.manual_seed(seed)
    return LlamaForCausalLM(tiny_vllm_config()).eval()


def write_model_dir(path: Path, model: LlamaForCausalLM) -> Path:
    """Saves ``model`` and the byte tokenizer as an HF directory that vLLM loads."""
    model.save_pretrained(path)
    tiny_tokenizer().save_pretrained(path)
    return path


def require_vllm() -> None:
    """Skips the calling test when vLLM is not importable."""
    pytest.importorskip(
        "vllm", reason="vLLM is not installed (LIGHTRFT_EXTRAS=...,vllm bash scripts/setup.sh)"
    )


def tiny_engine_params(directory: Path, **extra: Any):  # -> VllmEngineParams
    """vLLM settings for a tiny model in ``directory``: fp32, eager, a 64 MiB KV cache and
    256 positions (``extra`` adds or overrides fields)."""
    from lightrft.adapters.vllm import VllmEngineParams

    fields = {"dtype": "float32", "kv_cache_gib": 0.0625, "max_model_len": 256}
    return VllmEngineParams(str(directory), enforce_eager=True, **{**fields, **extra})


def shared_engine():  # -> (VllmRolloutEngine, initial weights)
    """The process's engine on ``tiny_vllm_model(0)``, awake and holding those weights."""
    require_vllm()
    from lightrft.adapters.vllm import VllmRolloutEngine

    if "engine" not in _ENGINE:
        directory = Path(tempfile.mkdtemp(prefix="lightrft-vllm-"))
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        model = tiny_vllm_model(0)
        write_model_dir(directory, model)
        params = tiny_engine_params(directory, sync_bucket_mib=0.05)  # ~50 KB: a bucket a layer
        _ENGINE["engine"] = VllmRolloutEngine(params, "cpu")
        _ENGINE["initial"] = [(n, p.detach().clone()) for n, p in model.named_parameters()]
        _ENGINE["path"] = directory
    engine = _ENGINE["engine"]
    initial = _ENGINE["initial"]
    engine.wake_up()
    engine.load_weights(iter(initial))
    return engine, initial


def shared_model_dir() -> Path:
    """The directory the shared engine was started from."""
    shared_engine()
    return _ENGINE["path"]  # type: ignore[return-value]


def close_shared_engine() -> None:
    """Shuts the shared engine down, if one was started (the next :func:`shared_engine`
    starts a new one)."""
    engine = _ENGINE.pop("engine", None)
    _ENGINE.clear()
    if engine is not None:
        engine.close()  # type: ignore[attr-defined]
