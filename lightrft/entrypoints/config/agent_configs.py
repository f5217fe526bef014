"""Config models of multi-turn agents: environments (``rollout.environment``), their tools
(``rollout.environment.tools``) and the episode limits (``rollout.agent``). See
docs/agents.md."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lightrft.domain.tool_calls import TOOL_CALL_FORMATS
from lightrft.entrypoints.config.base import Section
from lightrft.entrypoints.config.components import (
    ENVIRONMENT_CONFIGS,
    REWARD_SOURCE_CONFIGS,
    TOOL_CONFIGS,
    ComponentSection,
    RewardSourceSection,
    component_field,
    register_config,
)
from lightrft.entrypoints.config.extractor_field import ExtractorNames, extractors_field
from lightrft.entrypoints.config.gateway_configs import GatewayConfig

ToolFormatName = Literal["hermes", "json"]


class AgentConfig(Section):
    """Limits of a multi-turn episode (with ``rollout.environment``)."""

    max_response_tokens: int | None = Field(
        None,
        gt=0,
        description="Token budget of an episode after the prompt: generated plus observation "
        "tokens (None: max_turns x (max_new_tokens + max_observation_tokens) at most).",
    )
    max_observation_tokens: int = Field(
        4096,
        gt=0,
        description="Longest observation, in tokens (and 32 characters a token, checked "
        "before rendering); a longer one ends the episode observation_too_long. Also what "
        "an environment's reset may add to the prompt.",
    )
    max_abs_reward: float = Field(
        1e6,
        gt=0,
        description="Largest turn reward, in size, an environment may return; a larger or "
        "non-finite one ends the episode env_invalid.",
    )
    max_counter_keys: int = Field(
        64,
        gt=0,
        description="Most counter names an episode may hold; an environment that sends more "
        "ends its episode env_invalid.",
    )
    stop_on_env_failures: bool = Field(
        True,
        description="Stop the run (checkpoint, one-line error) when the environment keeps "
        "failing: env_failure_threshold of the episodes for env_failure_patience rollouts.",
    )
    env_failure_threshold: float = Field(
        0.9,
        gt=0,
        le=1,
        description="Fraction of a rollout's episodes ending env_error or env_invalid that "
        "counts as failing.",
    )
    env_failure_patience: int = Field(
        3, ge=1, description="Failing rollouts in a row that stop the run."
    )
    episode_timeout_s: float = Field(
        300.0, gt=0, description="Wall-clock deadline of one episode, in seconds."
    )
    step_timeout_s: float = Field(
        30.0,
        gt=0,
        description="Deadline of one environment call (reset or step); a miss ends the "
        "episode, counted as agent/env_timeouts.",
    )
    straggler_wait_s: float = Field(
        0.05,
        ge=0,
        description="After the first environment step of a turn is back, how long to wait for "
        "the others before generating the next turn of those that are ready.",
    )
    gateway: GatewayConfig | None = Field(
        None,
        description="Episodes of a black-box agent program through an OpenAI-compatible "
        "endpoint (docs/agents.md, the rollout gateway); excludes rollout.environment.",
    )


class EnvironmentSection(ComponentSection):
    """Base of an environment's config."""

    def stop_strings(self) -> tuple[str, ...]:
        """Strings that end a model turn besides its end-of-turn token."""
        return ()

    def describe(self) -> str:
        """Names the environment in messages."""
        return f"environment {self.type!r}"


class ToolSection(ComponentSection):
    """Base of a tool's config."""


@register_config(TOOL_CONFIGS, "calculator")
class CalculatorToolConfig(ToolSection):
    """Exact arithmetic (+ - * / // % **, parentheses) parsed without eval."""

    type: Literal["calculator"] = "calculator"


@register_config(TOOL_CONFIGS, "python")
class PythonToolConfig(ToolSection):
    """Runs the model's Python program in the code sandbox; returns what it prints."""

    type: Literal["python"] = "python"
    sandbox: Literal["auto", "bwrap", "unshare", "unsafe_local"] = Field(
        "auto", description="Sandbox backend (see docs/security.md)."
    )
    timeout_s: float = Field(5.0, gt=0, description="Wall-clock limit of one program.")
    memory_mb: int = Field(256, ge=16, description="Memory limit of one program.")


@register_config(ENVIRONMENT_CONFIGS, "tools")
class ToolEnvironmentConfig(EnvironmentSection):
    """The model calls tools until it answers; the answer is graded against the reference."""

    type: Literal["tools"] = "tools"
    tools: list[component_field(TOOL_CONFIGS)] = Field(  # type: ignore[valid-type]
        default_factory=lambda: [CalculatorToolConfig()],
        description="Tools offered: sections with a type (calculator, python, ...).",
    )
    format: ToolFormatName = Field(
        "hermes",
        description="Tool-call format: hermes (<tool_call>{json}</tool_call>, Qwen / SmolLM2 "
        "fine-tunes) or json (the whole turn is one JSON call, Llama 3).",
    )
    call_timeout_s: float = Field(10.0, gt=0, description="Deadline of one tool call.")
    correct_reward: float = Field(1.0, description="Reward of a right final answer.")
    wrong_reward: float = Field(0.0, description="Reward of a wrong final answer.")
    extractors: ExtractorNames = extractors_field()

    def stop_strings(self) -> tuple[str, ...]:
        """The tool-call format's closing tag."""
        return TOOL_CALL_FORMATS.get(self.format).stop_strings


@register_config(REWARD_SOURCE_CONFIGS, "environment")
class EnvironmentRewardConfig(RewardSourceSection):
    """The reward each multi-turn episode earned from its environment (sum over turns)."""

    type: Literal["environment"] = "environment"
    missing_score: float = Field(
        0.0, description="Score of a sample that is not an episode (no rollout.environment)."
    )


@register_config(ENVIRONMENT_CONFIGS, "http")
class HttpEnvironmentConfig(EnvironmentSection):
    """An environment served over HTTP (the protocol of adapters/agents/http_wire.py; serve
    any environment with adapters/agents/environment_service.py)."""

    type: Literal["http"] = "http"
    url: str = Field(..., description="Base URL of the environment service.")
    token: str | None = Field(None, description="Bearer token sent with every request.")
    timeout_s: float = Field(30.0, gt=0, description="Deadline of one request attempt.")
    max_attempts: int = Field(4, ge=1, description="Attempts per request (retries + 1).")
    backoff_base_s: float = Field(0.5, ge=0, description="First backoff (full jitter).")
    backoff_max_s: float = Field(8.0, ge=0, description="Longest backoff.")
    max_response_bytes: int = Field(
        4 * 2**20,
        ge=1024,
        description="Largest answer read from the service; a larger one ends its episode "
        "env_error (refused while it streams in, before it is parsed or tokenised).",
    )
    stop: list[str] = Field(
        default_factory=list,
        description="Strings that end a model turn (e.g. the tool-call format's closing tag).",
    )

    def stop_strings(self) -> tuple[str, ...]:
        """The configured ``stop`` strings."""
        return tuple(self.stop)

    def describe(self) -> str:
        """Names the service by its URL."""
        return f"environment service {self.url}"
