"""Config of the rollout gateway (``rollout.agent.gateway``): a black-box agent program per
episode, calling the policy through an OpenAI-compatible endpoint. See docs/agents.md."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from lightrft.entrypoints.config.base import Section

_FUNCTION = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class GatewayConfig(Section):
    """The agent program and the limits of its episodes."""

    command: list[str] | None = Field(
        None,
        description="The agent program as a command, e.g. [python, my_agent.py]; it gets "
        "OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL, LIGHTRFT_TASK (JSON) and "
        "LIGHTRFT_REWARD_FILE in its environment.",
    )
    function: str | None = Field(
        None,
        description="The agent program as a Python callable 'package.module:function' "
        "(called with the task dict in a process of its own; a number it returns is its "
        "reward). Give command or function.",
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="More environment variables for the agent program."
    )
    episode_timeout_s: float = Field(
        300.0,
        gt=0,
        description="Wall-clock deadline of an episode; the agent's process group is killed "
        "then (end reason deadline).",
    )
    call_timeout_s: float = Field(
        60.0, gt=0, description="Deadline of one model call (HTTP 504 past it)."
    )
    max_calls: int = Field(
        16, gt=0, description="Model calls an episode may make (the next gets HTTP 429)."
    )
    max_choices: int = Field(8, gt=0, description="Largest n of one call.")
    reward: Literal["agent", "sources"] = Field(
        "agent",
        description="agent: the reward the program reports (POST /v1/episodes/reward or its "
        "reward file), read by reward.sources=[{type: environment}]; sources: the reward "
        "sources score the episode's final answer.",
    )
    missing_reward: float = Field(
        0.0, description="Reward of an episode whose program reported none (reward=agent)."
    )
    temperature: Literal["run", "request"] = Field(
        "run",
        description="run: every call samples at rollout.temperature (what the trainer's "
        "log-probs assume); request: a call's own temperature is used.",
    )
    tool_format: Literal["hermes", "json"] = Field(
        "hermes", description="How the model writes tool calls (returned as tool_calls)."
    )
    straggler_wait_s: float = Field(
        0.05, ge=0, description="After a call arrives, how long to wait for others to batch."
    )
    pass_reference: bool = Field(
        False, description="Put the prompt's reference answer in the task the program gets."
    )
    model_name: str = Field("policy", description="The model name /v1/models lists.")

    @model_validator(mode="after")
    def _one_program(self) -> GatewayConfig:
        if (self.command is None) == (self.function is None):
            raise ValueError(
                "rollout.agent.gateway needs exactly one of command (a list of words) and "
                "function ('package.module:function')"
            )
        if self.command is not None and not self.command:
            raise ValueError("rollout.agent.gateway.command is empty")
        if self.function is not None and not _FUNCTION.match(self.function):
            raise ValueError(
                f"rollout.agent.gateway.function={self.function!r} is not 'package.module:function'"
            )
        return self
