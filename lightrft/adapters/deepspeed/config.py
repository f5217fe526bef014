"""The DeepSpeed config dict of :class:`DeepSpeedStrategy` (pure: no DeepSpeed import).

Gradient accumulation is owned by the caller, not by DeepSpeed:

- ``managed_gradient_accumulation: false`` makes every ``engine.step()`` the accumulation
  boundary, so any number of ``backward`` calls (the micro-batches of one global batch)
  followed by one ``step`` form one optimizer update, whatever that number is;
- ``gradient_accumulation_steps: 1`` keeps ``engine.backward`` from dividing the loss
  (it divides by this number), so the gradient is that of the sum of the micro-batch losses;
- DeepSpeed averages gradients over the W data-parallel ranks, so a loss normalized by
  global counts must be multiplied by W before ``backward`` (the application does this),
  exactly as with FSDP.

``train_batch_size`` = micro-batch (1) x accumulation (1) x W only satisfies DeepSpeed's
consistency check; nothing reads it in this mode. Gradient clipping by the global norm is
DeepSpeed's (``gradient_clipping``) under ZeRO 1-3; under stage 0 the strategy clips itself.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from lightrft.domain.types import OptimizerParams

ZERO_STAGES = (0, 1, 2, 3)
# Keys whose values the exactness argument above depends on: not overridable.
OWNED_KEYS = (
    "train_batch_size",
    "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps",
    "managed_gradient_accumulation",
    "gradient_clipping",
    "optimizer",
    "scheduler",
    "fp16",
)
NEVER_PRINT = 2**31 - 1


def build_deepspeed_config(
    optim: OptimizerParams,
    *,
    zero_stage: int,
    bf16: bool,
    cpu_offload: bool,
    world_size: int,
    pin_memory: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The config passed to ``deepspeed.initialize`` (see the module docstring).

    Args:
        optim: AdamW settings; only ``max_grad_norm`` is read here (the optimizer itself is
            built by the strategy, the learning rate set by it every step).
        zero_stage: 0 (plain data parallel), 1 (optimizer state sharded), 2 (+ gradients),
            3 (+ parameters).
        bf16: bf16 parameters and gradients with fp32 master weights (ZeRO >= 1); a
            non-finite gradient norm skips the step (``check_grad_overflow``).
        cpu_offload: ZeRO-Offload: fp32 master weights and AdamW state in host memory,
            stepped by DeepSpeedCPUAdam (ZeRO >= 1).
        world_size: W, the number of data-parallel ranks.
        pin_memory: pin the offloaded host buffers (only meaningful with an accelerator).
        extra: merged recursively over the result (e.g. ``{"zero_optimization":
            {"stage3_param_persistence_threshold": 0}}``); may not set :data:`OWNED_KEYS`.
    """
    if zero_stage not in ZERO_STAGES:
        raise ValueError(f"zero_stage must be one of {ZERO_STAGES}, got {zero_stage!r}")
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    if zero_stage == 0 and (bf16 or cpu_offload):
        raise ValueError("bf16 and cpu_offload need zero_stage >= 1")
    clip = optim.max_grad_norm if optim.max_grad_norm is not None and zero_stage > 0 else 0.0
    zero: dict[str, Any] = {"stage": zero_stage}
    if cpu_offload:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": pin_memory}
    config: dict[str, Any] = {
        "train_micro_batch_size_per_gpu": 1,
        "gradient_accumulation_steps": 1,
        "train_batch_size": world_size,
        "managed_gradient_accumulation": False,
        "gradient_clipping": float(clip),
        "zero_optimization": zero,
        "bf16": {"enabled": bf16, "check_grad_overflow": True},
        "fp16": {"enabled": False},
        "zero_allow_untested_optimizer": True,  # torch AdamW as the client optimizer
        "steps_per_print": NEVER_PRINT,
        "wall_clock_breakdown": False,
    }
    if extra:
        owned = sorted(set(extra) & set(OWNED_KEYS))
        if owned:
            raise ValueError(f"extra_config may not set {owned}: DeepSpeedStrategy owns them")
        config = merge_configs(config, extra)
    return config


def merge_configs(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``override`` merged in: nested dicts merge, other values replace."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_configs(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
