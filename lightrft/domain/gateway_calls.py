"""The rollout gateway's ports: what its HTTP front end calls, and the agent programs it runs.

An agent program (it knows nothing of LightRFT) calls the model through an OpenAI-compatible
endpoint as often as it likes; the gateway records each call's exact prompt ids and sampled
ids (:class:`~lightrft.domain.token_continuity.RecordedCall`), and
:func:`~lightrft.domain.token_continuity.join_calls` joins them into the episode's trained
rows. The gateway lives in :mod:`lightrft.application.gateway_rollout`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from lightrft.domain.agent import AgentTimeoutError


class GatewayAuthError(PermissionError):
    """A call with no token, or the token of no running episode (HTTP 401)."""


class GatewayLimitError(RuntimeError):
    """A call the episode's limits refuse (``max_calls``, a bad request; HTTP 429 / 400)."""

    def __init__(self, message: str, status: int = 429) -> None:
        super().__init__(message)
        self.status = status


class GatewayCallTimeoutError(AgentTimeoutError):
    """A model call that got no answer within its deadline (HTTP 504); the message names
    the call and the limit."""


# --- the gateway's port: what its HTTP front end calls -----------------------------------

ChoiceFinish = Literal["stop", "length", "tool_calls"]


@dataclass(frozen=True)
class ChatRequest:
    """A chat-completions request, validated: OpenAI-format ``messages`` and ``tools``
    (JSON objects as sent), ``n`` choices, at most ``max_tokens`` each (``None``: the run's
    ``rollout.max_new_tokens``), ``temperature`` (``None``: the run's)."""

    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[Mapping[str, Any], ...] = ()
    n: int = 1
    max_tokens: int | None = None
    temperature: float | None = None


@dataclass(frozen=True)
class ToolCallOut:
    """A tool call parsed from a choice, in the format the family writes."""

    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class ChatChoice:
    """One choice of a reply: its text, the tool calls parsed from it, why it ended."""

    text: str
    tool_calls: tuple[ToolCallOut, ...]
    finish_reason: ChoiceFinish


@dataclass(frozen=True)
class ChatReply:
    """The answer to a :class:`ChatRequest`."""

    choices: tuple[ChatChoice, ...]
    prompt_tokens: int
    completion_tokens: int
    policy_version: int
    model: str


@runtime_checkable
class GatewayBackend(Protocol):
    """What the gateway's HTTP front end serves. Every method takes the caller's bearer
    token and raises :class:`GatewayAuthError` for a token of no running episode."""

    @property
    def model_name(self) -> str:
        """The name ``/v1/models`` lists and replies carry."""
        ...

    def check_token(self, token: str) -> None:
        """Raises :class:`GatewayAuthError` unless ``token`` is a running episode's."""
        ...

    def complete(self, token: str, request: ChatRequest) -> ChatReply:
        """Samples the reply (blocking, within the call's deadline; raises
        :class:`GatewayCallTimeoutError` past it, :class:`GatewayLimitError` over a limit)."""
        ...

    def report_reward(self, token: str, reward: float) -> None:
        """Records the episode's reward (the last report wins)."""
        ...


@dataclass(frozen=True)
class AgentLaunch:
    """What an agent program is started with: the endpoint, its episode's token, the task
    (a JSON object), and a file it may write its reward to."""

    episode: str
    base_url: str
    token: str
    model: str
    task: Mapping[str, Any]
    reward_file: str


@runtime_checkable
class AgentProcess(Protocol):
    """A running agent program."""

    def poll(self) -> int | None:
        """Its exit status, or ``None`` while it runs."""
        ...

    def kill(self) -> None:
        """Kills it and everything it started (its process group)."""
        ...

    def reward_from_file(self) -> float | None:
        """The number it wrote to its reward file, or ``None`` (no file, not a finite
        number)."""
        ...

    def log_tail(self) -> str:
        """The last lines it printed (for error messages)."""
        ...


@runtime_checkable
class AgentLauncher(Protocol):
    """Starts the configured agent program for one episode."""

    def start(self, launch: AgentLaunch) -> AgentProcess:
        """Starts it; raises ``OSError`` when it cannot be started."""
        ...


@runtime_checkable
class ChatRenderer(Protocol):
    """The model family's chat template over OpenAI-format messages."""

    def prompt_ids(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> tuple[int, ...]:
        """The whole conversation rendered with the generation prompt, tokenized."""
        ...

    def observation_ids(
        self,
        messages: Sequence[Mapping[str, Any]],
        generated: Sequence[int],
        tools: Sequence[Mapping[str, Any]],
    ) -> tuple[int, ...]:
        """The ids after a model turn ``generated``: the rest of its assistant turn,
        ``messages`` (none of them an assistant's) and the next assistant header."""
        ...

    def decode(self, token_ids: Sequence[int]) -> str:
        """Text of ``token_ids`` without special tokens (what the agent is sent)."""
        ...
