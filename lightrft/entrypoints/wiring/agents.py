"""Built-in agent components: tools, environments, the environment reward, and the
multi-turn engine that wraps the configured engine when ``rollout.environment`` is set."""

from __future__ import annotations

from typing import Any

from lightrft.adapters.agents.calculator import CalculatorTool
from lightrft.adapters.agents.python_tool import PythonTool
from lightrft.adapters.agents.tool_environment import ToolEnvironment
from lightrft.adapters.hf.chat_turns import HfTurnRenderer
from lightrft.adapters.hf.media_turns import HfMediaTurnRenderer
from lightrft.adapters.hf.vision_language import VisionLanguageEncoder
from lightrft.adapters.rewards import MathAnswerGrader
from lightrft.adapters.rewards.environment_reward import EnvironmentReward
from lightrft.adapters.sandbox import open_sandbox
from lightrft.application.agent_rollout import AgentRolloutEngine
from lightrft.application.params import AgentParams
from lightrft.domain.agent import EnvironmentFactory, Tool
from lightrft.domain.ports import RolloutEngine
from lightrft.domain.tool_calls import TOOL_CALL_FORMATS
from lightrft.entrypoints.config.agent_configs import (
    CalculatorToolConfig,
    EnvironmentRewardConfig,
    EnvironmentSection,
    HttpEnvironmentConfig,
    PythonToolConfig,
    ToolEnvironmentConfig,
)
from lightrft.entrypoints.field_copy import copy_fields
from lightrft.entrypoints.wiring.gateway import gateway_engine
from lightrft.entrypoints.wiring.registries import (
    ENVIRONMENTS,
    MODEL_LOADERS,
    TOOLS,
    BuildContext,
    build,
)


def build_calculator(section: CalculatorToolConfig, context: BuildContext) -> CalculatorTool:
    return CalculatorTool()


def build_python_tool(section: PythonToolConfig, context: BuildContext) -> PythonTool:
    return PythonTool(
        open_sandbox(section.sandbox), timeout_s=section.timeout_s, memory_mb=section.memory_mb
    )


def build_tool_environment(
    section: ToolEnvironmentConfig, context: BuildContext
) -> EnvironmentFactory:
    tools: list[Tool] = [build(TOOLS, t, context) for t in section.tools]
    grader = MathAnswerGrader(tuple(section.extractors))
    tool_format = TOOL_CALL_FORMATS.get(section.format)

    def make() -> ToolEnvironment:
        return ToolEnvironment(
            tools,
            tool_format,
            grader,
            call_timeout_s=section.call_timeout_s,
            correct_reward=section.correct_reward,
            wrong_reward=section.wrong_reward,
        )

    return make


def build_http_environment(section: HttpEnvironmentConfig, context: BuildContext) -> Any:
    # httpx comes with the "serve" extra: imported only when an HTTP environment is asked for
    from lightrft.adapters.agents.http_environment import HttpEnvironments
    from lightrft.adapters.http_client.retry import RetryPolicy

    return HttpEnvironments(
        section.url,
        token=section.token,
        timeout_s=section.timeout_s,
        retry=RetryPolicy(section.max_attempts, section.backoff_base_s, section.backoff_max_s),
        max_response_bytes=section.max_response_bytes,
    )


def build_environment_reward(
    section: EnvironmentRewardConfig, context: BuildContext
) -> EnvironmentReward:
    return EnvironmentReward(name=section.label, missing_score=section.missing_score)


def agent_params(context: BuildContext, environment: EnvironmentSection) -> AgentParams:
    rollout = context.config.rollout
    return copy_fields(
        AgentParams,
        rollout.agent,
        "max_response_tokens episode_timeout_s step_timeout_s straggler_wait_s "
        "max_observation_tokens max_abs_reward max_counter_keys stop_on_env_failures "
        "env_failure_threshold env_failure_patience",
        max_turns=rollout.max_turns,
        stop_strings=environment.stop_strings(),
        vocab_size=_vocab_size(context.tokenizer),
        environment=environment.describe(),
    )


def _vocab_size(tokenizer: Any) -> int | None:
    """How many token ids the tokenizer (or a processor's) knows; None when it cannot say."""
    try:
        return len(getattr(tokenizer, "tokenizer", tokenizer)) or None
    except TypeError:
        return None


def with_environment(context: BuildContext, engine: RolloutEngine) -> RolloutEngine:
    """``engine`` itself, or with ``rollout.environment`` the multi-turn engine over it, or
    with ``rollout.agent.gateway`` the rollout gateway over it."""
    gateway = context.config.rollout.agent.gateway
    if gateway is not None:  # a black-box agent program per episode (wiring/gateway.py)
        return gateway_engine(context, engine, gateway)
    section = context.config.rollout.environment
    if section is None:
        return engine
    environments: EnvironmentFactory = build(ENVIRONMENTS, section, context)
    return AgentRolloutEngine(
        engine, environments, _renderer(context), agent_params(context, section)
    )


def _renderer(context: BuildContext) -> HfTurnRenderer:
    """The observation renderer: one that takes images for a model that reads them (its
    prompt encoder processes them), else text only (an image is then an error)."""
    make = MODEL_LOADERS.get(context.config.model.modality).prompt_encoder
    encoder = None if make is None else make(context)
    if isinstance(encoder, VisionLanguageEncoder):
        return HfMediaTurnRenderer(context.tokenizer, encoder)
    return HfTurnRenderer(context.tokenizer)
