"""Multi-turn agents: the environment, tool and turn-rendering ports and their values.

An episode alternates model turns and observations. The model generates until a stop (end
of its turn or the end of a tool call); the environment reads that action and answers with
an observation (tool results, a user message), a reward and whether the episode is done. The
observation is rendered into token ids once, with the model's chat template
(:class:`TurnRenderer`), and appended after the generated ids, which stay exactly as
generated. Only generated tokens are trained (:mod:`lightrft.domain.trajectory`).

Every wait on an environment or a tool has a deadline; a missed deadline is an
:class:`AgentTimeoutError` naming what was awaited, which the rollout turns into an error
observation or the end of the episode, and a counted metric, never a hang.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from lightrft.domain.modality import Payload
from lightrft.domain.types import Completion, FinishReason, PromptRecord, SamplingParams


class AgentTimeoutError(TimeoutError):
    """A wait on an environment or a tool ran past its deadline; the message names it."""


class ObservationMediaError(ValueError):
    """An observation's image cannot be used (not decodable, too large, an unknown kind);
    the message names the episode and the image. The episode ends ``env_invalid``."""


class ToolError(RuntimeError):
    """A tool could not answer (bad arguments, a failed program); the message is shown to
    the model as the tool's result."""


@dataclass(frozen=True)
class ChatMessage:
    """One message of a conversation, as a chat template reads it.

    ``images`` (an observation of a tool or environment that returns pictures): each a
    decoded image (``PIL.Image``), encoded image bytes (PNG, JPEG ...) or a file path;
    opaque here, decoded and bounded by the policy's renderer
    (:class:`MediaTurnRenderer`). The template shows them before ``content``.
    """

    role: str  # "user", "tool", "system", ...
    content: str
    name: str | None = None  # the tool's name for role "tool"
    images: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Action:
    """What the model produced in one turn: its exact token ids and their text."""

    token_ids: tuple[int, ...]
    text: str
    finish_reason: FinishReason  # "stop": end of turn or a stop string; "length": cut off


@dataclass(frozen=True)
class StepOutcome:
    """The environment's answer to an action.

    ``observation`` is appended to the conversation (empty when ``done``); ``reward`` is this
    turn's reward (an episode's reward is the sum over its turns); ``counters`` are numbers
    summed per episode and logged as ``agent/<key>`` (e.g. ``tool_calls``,
    ``tool_errors/malformed``).
    """

    observation: tuple[ChatMessage, ...]
    reward: float = 0.0
    done: bool = False
    counters: Mapping[str, float] = field(default_factory=dict)


@runtime_checkable
class Environment(Protocol):
    """One episode's environment (a fresh instance per episode; never shared by threads)."""

    def reset(self, prompt: PromptRecord) -> PromptRecord:
        """Starts an episode on the prompt row; returns the first observation: the first
        model input, rendered and tokenized (usually ``prompt`` itself; an environment may
        return another rendering, e.g. with its tools' descriptions)."""
        ...

    def step(self, action: Action) -> StepOutcome:
        """Reacts to the model's turn."""
        ...

    def close(self) -> None:
        """Releases what the episode held (processes, connections)."""
        ...


EnvironmentFactory = Callable[[], Environment]


@dataclass(frozen=True)
class ToolSpec:
    """What the model is told about a tool: its name, purpose and JSON-schema parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    @classmethod
    def one_string(cls, name: str, description: str, argument: str, hint: str) -> ToolSpec:
        """A tool taking one required string argument, ``hint`` describing its value."""
        properties = {argument: {"type": "string", "description": hint}}
        schema = {"type": "object", "properties": properties, "required": [argument]}
        return cls(name=name, description=description, parameters=schema)


@runtime_checkable
class Tool(Protocol):
    """A function the model may call. Must return within its own time limit or raise."""

    @property
    def spec(self) -> ToolSpec:
        """Name, description and parameter schema."""
        ...

    def call(self, arguments: Mapping[str, Any]) -> str:
        """The result text; raises :class:`ToolError` for anything the model should see
        as an error (bad arguments, a failed program)."""
        ...


@runtime_checkable
class TurnRenderer(Protocol):
    """Renders observations into token ids with the model's chat template."""

    def observation_ids(
        self, messages: Sequence[ChatMessage], generated: Sequence[int]
    ) -> tuple[int, ...]:
        """The ids that follow a model turn whose ids were ``generated``: the rest of the
        assistant turn the model did not generate itself (e.g. the end-of-turn token after
        a tool call cut at a stop string), ``messages`` as the template renders them, and
        the header of the next assistant turn."""
        ...

    def decode(self, token_ids: Sequence[int]) -> str:
        """Text of ``token_ids`` (special tokens kept, for reports)."""
        ...


@runtime_checkable
class EpisodeTurnEngine(Protocol):
    """A rollout engine that can keep a multi-turn episode's state (its KV cache) between
    the episode's turns; the multi-turn rollout uses it when the inner engine has it."""

    def generate_turns(
        self,
        prompts: Sequence[PromptRecord],
        sampling: SamplingParams,
        episodes: Sequence[str | None],
    ) -> list[Completion]:
        """``generate`` with one episode handle per prompt (``sampling.n == 1``)."""
        ...

    def release_episodes(self, episodes: Sequence[str]) -> None:
        """Drops what is held for ``episodes`` (they ended)."""
        ...


@runtime_checkable
class MediaTurnRenderer(TurnRenderer, Protocol):
    """A renderer for a policy that reads images: observations may carry them."""

    def observation_media(
        self,
        messages: Sequence[ChatMessage],
        generated: Sequence[int],
        media: Payload,
        where: str,
    ) -> tuple[tuple[int, ...], Payload]:
        """The observation's ids (as :meth:`TurnRenderer.observation_ids`, each image's
        placeholder expanded to the positions it fills) and the episode's media payload
        ``media`` with the observation's images appended (``where`` names the episode in
        errors: an image that cannot be decoded or is too large)."""
        ...
