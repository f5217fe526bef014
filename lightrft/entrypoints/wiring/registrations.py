"""Every built-in builder and the registry name it is registered under: the one list.

The builder modules only define functions; :func:`register_builtins` registers them, once:
the composition roots (and :func:`lightrft.entrypoints.api.build_container`) call it before
they build anything, and so does code that looks up :mod:`.registries` without a root. A
plugin registers its own with :func:`~lightrft.entrypoints.wiring.registries.register_component`.
"""

from __future__ import annotations

from typing import Any

from lightrft.domain.registry import Registry
from lightrft.entrypoints.wiring import (
    agents,
    engine_choice,
    engines,
    model_loaders,
    multimodal_loaders,
    process_reward_models,
    reward_engines,
    reward_model_builders,
    reward_sources,
    strategies,
)
from lightrft.entrypoints.wiring.registries import (
    ENGINES,
    ENVIRONMENTS,
    JUDGE_ENGINES,
    MODEL_LOADERS,
    REWARD_SOURCES,
    SCALAR_RM_ENGINES,
    STRATEGIES,
    TOOLS,
)

BUILTINS: tuple[tuple[Registry[Any], str, Any], ...] = (
    (MODEL_LOADERS, "text", model_loaders.TEXT_LOADER),
    (MODEL_LOADERS, "vision-language", multimodal_loaders.VISION_LANGUAGE_LOADER),
    (MODEL_LOADERS, "audio-language", multimodal_loaders.AUDIO_LANGUAGE_LOADER),
    (MODEL_LOADERS, "omni", multimodal_loaders.OMNI_LOADER),
    (ENGINES, "hf", engines.build_hf_engine),
    (ENGINES, "vllm", engines.build_vllm_engine),
    (ENGINES, "sglang", engines.build_sglang_engine),
    (ENGINES, "auto", engine_choice.build_auto_engine),
    (STRATEGIES, "single", strategies.build_single),
    (STRATEGIES, "fsdp2", strategies.build_fsdp2),
    (STRATEGIES, "deepspeed", strategies.build_deepspeed),
    (REWARD_SOURCES, "math", reward_sources.build_math),
    (REWARD_SOURCES, "choice", reward_sources.build_choice),
    (REWARD_SOURCES, "format", reward_sources.build_format),
    (REWARD_SOURCES, "length", reward_sources.build_length),
    (REWARD_SOURCES, "python", reward_sources.build_python),
    (REWARD_SOURCES, "ttrl", reward_sources.build_ttrl),
    (REWARD_SOURCES, "gsm8k_rule", reward_sources.build_think_boxed),
    (REWARD_SOURCES, "geo3k_rule", reward_sources.build_think_boxed),
    (REWARD_SOURCES, "avqa_rule", reward_sources.build_answer_tag),
    (REWARD_SOURCES, "judge_agreement", reward_sources.build_judge_agreement),
    (REWARD_SOURCES, "scalar_rm", reward_model_builders.build_scalar_rm),
    (REWARD_SOURCES, "remote", reward_model_builders.build_remote),
    (REWARD_SOURCES, "unit_tests", reward_model_builders.build_unit_tests),
    (REWARD_SOURCES, "generative_rm", reward_model_builders.build_generative_rm),
    (REWARD_SOURCES, "process_rm", process_reward_models.build_process_rm),
    (REWARD_SOURCES, "environment", agents.build_environment_reward),
    (SCALAR_RM_ENGINES, "hf", reward_engines.hf_scalar_rm),
    (SCALAR_RM_ENGINES, "vllm", reward_engines.vllm_scalar_rm),
    (JUDGE_ENGINES, "hf", reward_engines.hf_judge),
    (JUDGE_ENGINES, "vllm", reward_engines.vllm_judge),
    (JUDGE_ENGINES, "sglang", reward_engines.sglang_judge),
    (TOOLS, "calculator", agents.build_calculator),
    (TOOLS, "python", agents.build_python_tool),
    (ENVIRONMENTS, "tools", agents.build_tool_environment),
    (ENVIRONMENTS, "http", agents.build_http_environment),
)


_registered = False


def register_builtins() -> None:
    """Registers :data:`BUILTINS` (once; later calls do nothing)."""
    global _registered
    if _registered:
        return
    _registered = True
    for registry, name, builder in BUILTINS:
        registry.add(name, builder)
