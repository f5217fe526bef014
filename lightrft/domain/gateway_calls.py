"""The calls of a black-box agent through the rollout gateway, joined into trained rows.

An agent program (it knows nothing of LightRFT) calls the model through an OpenAI-compatible
endpoint as often as it likes; the gateway records each call's exact prompt ids (what the
engine was given) and sampled ids (what it generated, with its log-probs). Joining:

- a call whose prompt ids start with the context of an open row (that row's prompt followed
  by every id after it so far, the last call's sampled ids included) continues that row: the
  ids between that context and the call's prompt (tool results, a user message, the template's
  turn markers, rendered by the gateway) become an observation segment (loss mask 0), then the
  call's sampled ids a trained segment (loss mask 1);
- any other call (the agent rewrote, dropped or reordered its history, or sampled ``n``
  choices and went on from one of them) starts a new row whose prompt is that call's prompt.

So every sampled id is trained exactly once and only sampled ids are trained; nothing is
re-tokenised: each row's prompt plus response is, token for token, the context the engine
saw at its last call plus what it sampled there. The number of rows beyond one per episode is
the count of history rewrites. Pure logic; the gateway lives in
:mod:`lightrft.application.gateway_rollout`.

Shapes: each row's response is R ids (the sum of its segments' lengths).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from lightrft.domain.agent import AgentTimeoutError
from lightrft.domain.trajectory import EndReason, Episode, Segment
from lightrft.domain.types import FinishReason


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


@dataclass(frozen=True)
class RecordedCall:
    """One sampled choice of one model call: the engine's exact input and output ids.

    ``logprobs`` are the engine's (one per sampled id, ``None`` when it gives none);
    ``policy_version`` counts the weight syncs the engine had received when it sampled.
    """

    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    text: str
    finish_reason: FinishReason
    logprobs: tuple[float, ...] | None = None
    policy_version: int = 0

    def __post_init__(self) -> None:
        if self.logprobs is not None and len(self.logprobs) != len(self.completion_ids):
            raise ValueError(
                f"call has {len(self.completion_ids)} sampled ids but {len(self.logprobs)} logprobs"
            )

    @property
    def context(self) -> tuple[int, ...]:
        """The prompt followed by the sampled ids: what a continuing call's prompt starts with."""
        return self.prompt_ids + self.completion_ids


@dataclass(frozen=True)
class JoinedRow:
    """One separately trained row of an episode: a prompt and the segments after it."""

    prompt_ids: tuple[int, ...]
    segments: tuple[Segment, ...]
    calls: int  # model calls joined into this row

    def episode(
        self,
        turn_rewards: tuple[float, ...] = (),
        end_reason: EndReason = "done",
        counters: Mapping[str, float] | None = None,
    ) -> Episode:
        """The row as an :class:`Episode` (its ids, loss mask and log-probs)."""
        return Episode(self.segments, turn_rewards, end_reason, dict(counters or {}))

    @property
    def token_ids(self) -> tuple[int, ...]:
        """The response ids: every segment's, in order. Length R."""
        return self.episode().token_ids

    @property
    def loss_mask(self) -> tuple[int, ...]:
        """1 on sampled ids, 0 on the ids the gateway rendered between calls. Length R."""
        return self.episode().loss_mask

    @property
    def text(self) -> str:
        """The text of the row's last model turn."""
        return next(s.text for s in reversed(self.segments) if s.trained)


@dataclass
class _OpenRow:
    prompt_ids: tuple[int, ...]
    segments: list[Segment] = field(default_factory=list)
    calls: int = 0

    @property
    def context(self) -> tuple[int, ...]:
        return self.prompt_ids + tuple(t for s in self.segments for t in s.token_ids)

    def add(self, call: RecordedCall) -> None:
        gap = call.prompt_ids[len(self.context) :]
        if gap:
            self.segments.append(Segment(gap, "", False))
        self.segments.append(Segment(call.completion_ids, call.text, True, call.logprobs))
        self.calls += 1


def join_calls(calls: Sequence[RecordedCall]) -> tuple[JoinedRow, ...]:
    """The trained rows of one episode's calls, in call order (see the module docstring).

    A call continues the open row with the longest context its prompt starts with; a call
    without sampled ids adds nothing (it is skipped). Rows appear in the order they started.
    """
    rows: list[_OpenRow] = []
    for call in calls:
        if not call.completion_ids:
            continue
        extendable = [r for r in rows if _starts_with(call.prompt_ids, r.context)]
        if extendable:
            max(extendable, key=lambda r: len(r.context)).add(call)
        else:
            row = _OpenRow(call.prompt_ids)
            row.add(call)
            rows.append(row)
    return tuple(JoinedRow(r.prompt_ids, tuple(r.segments), r.calls) for r in rows)


def _starts_with(ids: tuple[int, ...], prefix: tuple[int, ...]) -> bool:
    return len(ids) >= len(prefix) and ids[: len(prefix)] == prefix


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
