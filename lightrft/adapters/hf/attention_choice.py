"""The attention kernel a model is loaded with; ``auto``: FlashAttention-2 where it can run,
else PyTorch SDPA.

FlashAttention-2 runs when the ``flash_attn`` package imports, the device is a CUDA GPU and
the forward computes in bf16 or fp16 (its kernels take no fp32).
"""

from __future__ import annotations

import importlib.util
from typing import Literal, NamedTuple

import torch

AttnImplementation = Literal["sdpa", "eager", "flash_attention_2"]
HALF = ("bf16", "fp16")


class AttentionChoice(NamedTuple):
    """The kernel to load the model with and why."""

    name: AttnImplementation
    reason: str


def flash_attention_blocker(device: torch.device, compute_dtype: str | None = None) -> str | None:
    """Why FlashAttention-2 cannot run on ``device`` computing in ``compute_dtype`` (a
    ``model.dtype`` name; None: not checked), or None when it can."""
    if importlib.util.find_spec("flash_attn") is None:
        return "needs the flash-attn package (pip install 'lightrft[flash]')"
    if device.type != "cuda":
        return f"runs on CUDA devices only, not on {device.type!r}"
    if compute_dtype is not None and compute_dtype not in HALF:
        return f"computes in bf16/fp16 only, not {compute_dtype!r}"
    return None


def check_attn_implementation(name: str, device: torch.device) -> None:
    """Raises ``ValueError`` when ``name`` (as configured, not ``auto``) cannot run on
    ``device`` in this environment."""
    blocker = flash_attention_blocker(device) if name == "flash_attention_2" else None
    if blocker is not None:
        raise ValueError(
            f"attn_implementation='flash_attention_2' {blocker}; use 'sdpa', or 'auto' "
            "(flash where it runs)"
        )


def choose_attention(
    requested: str, device: torch.device, compute_dtype: str, *, dense_mask: bool = False
) -> AttentionChoice:
    """``requested`` itself unless it is ``"auto"``; ``auto`` picks flash_attention_2 when
    :func:`flash_attention_blocker` finds nothing and no 4-D mask is needed (``dense_mask``:
    prefix sharing forced on), else sdpa."""
    if requested != "auto":
        return AttentionChoice(requested, "configured")  # type: ignore[arg-type]
    if dense_mask:
        return AttentionChoice("sdpa", "prefix sharing 'on' needs a 4-D attention mask")
    blocker = flash_attention_blocker(device, compute_dtype)
    if blocker is not None:
        return AttentionChoice("sdpa", f"flash_attention_2 {blocker}")
    return AttentionChoice("flash_attention_2", "flash-attn, a CUDA device and bf16/fp16")
